package flow_test

import (
	"errors"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestQPRetryLimit: a link down longer than the QPs' retry limit, 4.096 us x 2^ib_timeout x
// (ib_retry_cnt + 1) (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT; IBA vol. 1 §9.7.6.1), fails the run
// with the QP named, on both backends; one shorter than the limit only stalls it.
// examples/fault-ib-link-down.yaml: leaf0-spine0 fails at 50 us and the subnet manager
// reroutes 2 ms later (RTO 200 us). ib_timeout 8, retry 0: 1.049 ms per QP, shorter than the
// 2 ms stall: the first QP that crossed the link fails one limit after its last ACK progress
// (within one RTO, the timer's granularity), which is within an RTO of the failure. ib_timeout
// 9, retry 1: 4.194 ms, longer than the stall: the run ends as with no limit (ib_timeout 0).
func TestQPRetryLimit(t *testing.T) {
	const failAt, rto = 50 * units.Microsecond, 200 * units.Microsecond
	for _, backend := range []string{"packet", "flow"} {
		run := func(timeout, retries int) (units.Time, error) {
			g, cfg, mg := loadExample(t, "fault-ib-link-down.yaml")
			cfg.Faults.Recovery.IBTimeout, cfg.Faults.Recovery.IBRetryCnt = timeout, retries
			if backend == "flow" {
				r, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
				if err != nil {
					return 0, err
				}
				return r.SimTime, nil
			}
			rt, err := topo.ComputeRoutes(g)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Check = true
			net, err := fabric.New(g, rt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := net.Run(mg, units.MaxTime)
			if err != nil {
				return 0, err
			}
			return r.SimTime, nil
		}
		_, err := run(8, 0)
		var qe *fabric.QPRetryError
		if !errors.As(err, &qe) {
			t.Fatalf("%s: a 2 ms stall with a 1.049 ms retry limit: err %v, want a QPRetryError", backend, err)
		}
		t.Logf("%s: %v", backend, err)
		lim := 4096 * units.Nanosecond << 8
		if qe.Limit != lim || qe.At-qe.Since <= lim || qe.At-qe.Since > lim+rto {
			t.Errorf("%s: limit %v, failed %v after its last progress; want limit %v, failed within (limit, limit + RTO]", backend, qe.Limit, qe.At-qe.Since, lim)
		}
		if qe.Since < failAt-rto || qe.Since > failAt+rto {
			t.Errorf("%s: the stall began at %v, want within one RTO of the failure at %v", backend, qe.Since, failAt)
		}
		none, err := run(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		long, err := run(9, 1)
		if err != nil {
			t.Fatalf("%s: a 2 ms stall with a 4.194 ms retry limit: %v", backend, err)
		}
		if long != none {
			t.Errorf("%s: with the retry limit above the stall the run took %v, without a limit %v", backend, long, none)
		}
	}
}
