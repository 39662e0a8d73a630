// Package compare runs one training workload on several fabric variants of one GPU cluster
// and prices each: the `fabricsim compare` command. A scenario (Parse, Load) names the cluster
// (servers of GPUs, one NIC per GPU, a rail-optimized network), the workload (package
// training), the data path, cost options and the variants (InfiniBand NDR, RoCEv2 with vendor or
// tuned DCQCN, RoCEv2 PFC-only, or the user's own, each a fabric section loaded by package
// scenario). Run returns one Result, from which the terminal table, compare.json and report.html
// are all rendered.
//
// Fidelity, in short (docs/compare.md has the argument): collectives inside a server take NCCL's
// ring time over NVLink and compute ops the step model's durations. A step whose network traffic
// fits FullStepPackets runs whole (CompileStep: one message graph on the whole cluster topology,
// on the packet or analytic backend); a larger one runs its network collectives class by class
// (same kind, size, dimension and stage; one collective of every group at once). Either way
// the step is the longest path through the plan's dependency graph with the ops' durations, so
// step time = compute + exposed communication exactly.
package compare
