#!/bin/sh
# fabricsim config-export --format connectx
# source: test preset
# values for 400Gbps ports, 20 m cable (ECN thresholds and headroom are per port rate and cable)
# Run as root on every host. IF is the RoCE netdev, PCI its mlx5 device (debugfs mounted).
set -e
IF=${IF:-eth0}
PCI=${PCI:-0000:08:00.0}
CC=/sys/kernel/debug/mlx5/$PCI/cc_params
ip link set dev "$IF" mtu 4200
mlnx_qos -i "$IF" --trust dscp
mlnx_qos -i "$IF" --pfc 0,0,0,1,0,0,0,0
mlnx_qos -i "$IF" --dscp2prio set,26,3
echo 1 > /sys/class/net/$IF/ecn/roce_np/enable/3
echo 1 > /sys/class/net/$IF/ecn/roce_rp/enable/3
echo 0 > $CC/rp_clamp_tgt_rate
echo 1 > $CC/rp_clamp_tgt_rate_ati
echo 50 > $CC/rp_time_reset
echo 32767 > $CC/rp_byte_reset
echo 1 > $CC/rp_threshold
echo 10 > $CC/rp_ai_rate
echo 0 > $CC/rp_max_rate
echo 50 > $CC/rp_hai_rate
echo 90 > $CC/rp_min_dec_fac
echo 1 > $CC/rp_min_rate
echo 0 > $CC/rp_rate_to_set_on_first_cnp
echo 1019 > $CC/rp_dce_tcp_g
echo 1 > $CC/rp_dce_tcp_rtt
echo 2 > $CC/rp_rate_reduce_monitor_period
echo 1023 > $CC/rp_initial_alpha_value
echo 11 > $CC/rp_gd
echo 2 > $CC/np_min_time_between_cnps
echo 48 > $CC/np_cnp_dscp
echo 6 > $CC/np_cnp_prio
# NCCL: QPs per connection (set in the training job's environment)
export NCCL_IB_QPS_PER_CONNECTION=2
