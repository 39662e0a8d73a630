package fabric

// SprayPolicy is how a spraying switch (routing: spray) picks among the equal-cost next hops
// for each packet (key `spray_policy`).
type SprayPolicy string

const (
	// SprayRandom picks uniformly at random.
	SprayRandom SprayPolicy = "random"
	// SprayLeastQueue picks the next hop whose egress queue for the packet's class holds the
	// fewest bytes, ties broken at random: adaptive routing by queue depth, as Spectrum-4
	// switches choose the least-loaded port for each packet ([NVIDIA-AR-Ethernet]).
	SprayLeastQueue SprayPolicy = "least_queue"
)

// SprayPolicies are the valid spraying policies.
var SprayPolicies = []SprayPolicy{SprayRandom, SprayLeastQueue}

// UnmarshalText parses a spraying policy.
func (p *SprayPolicy) UnmarshalText(b []byte) error {
	return parseMode(p, b, "a spraying policy", SprayPolicies)
}

// UETLoadBalance is how a UET sender picks each packet's entropy value (key
// `uet_load_balance`).
type UETLoadBalance string

const (
	// UETOblivious gives every packet a fresh pseudo-random entropy value (oblivious spraying).
	UETOblivious UETLoadBalance = "oblivious"
	// UETREPS recycles the entropy values of packets whose ACK came back without CE, up to 8
	// of them, and takes a fresh one when none is cached ([REPS]; [UEC-htsim] uec_mp.cpp
	// UecMpReps, buffer_reps.cpp: 8 entries; without its freezing mode, which needs trimming).
	UETREPS UETLoadBalance = "reps"
)

// UETLoadBalances are the valid entropy choices.
var UETLoadBalances = []UETLoadBalance{UETOblivious, UETREPS}

// UnmarshalText parses an entropy choice.
func (m *UETLoadBalance) UnmarshalText(b []byte) error {
	return parseMode(m, b, "a UET load balancing", UETLoadBalances)
}

// UETCC is Ultra Ethernet's congestion control at the sender (key `uet_cc`).
type UETCC string

const (
	// UETNSCC runs NSCC's window (transport/cc/nscc).
	UETNSCC UETCC = "nscc"
	// UETNoCC sends at line rate within the in-flight cap.
	UETNoCC UETCC = "none"
)

// UETCCs are the valid UET congestion controls.
var UETCCs = []UETCC{UETNSCC, UETNoCC}

// UnmarshalText parses a UET congestion control.
func (m *UETCC) UnmarshalText(b []byte) error {
	return parseMode(m, b, "a UET congestion control", UETCCs)
}

// leastQueued is spray_policy least_queue: among the candidate egress ports hops of switch s,
// the one with the fewest bytes waiting for pkt's class (a port serializing a frame counts one
// byte more than an idle one); the scan starts at a random candidate (r), so ties go to a random
// one.
func leastQueued(s *Switch, pkt *Packet, hops []int32, r uint64) int32 {
	k := len(hops)
	start := int(r % uint64(k))
	best, least := int32(-1), int64(0)
	for i := 0; i < k; i++ {
		h := hops[(start+i)%k]
		p := s.Ports[h]
		b := p.q[pkt.Prio].bytes
		if p.busy {
			b++
		}
		if best < 0 || b < least {
			best, least = h, b
			if b == 0 {
				break
			}
		}
	}
	return best
}
