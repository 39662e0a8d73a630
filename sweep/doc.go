// Package sweep runs one scenario over a grid of parameter values and collects one results
// table: `fabricsim sweep SWEEP.yaml --out DIR`.
//
// A sweep file names a base scenario (inline under base:, or base_file:) and axes, each a
// field path into the scenario (topology.link.rate, traffic.flows[2].size) with values or a
// numeric range. Values keep their YAML text, so units ("400Gbps") pass through to the
// scenario. Axes multiply (a cartesian product) unless zip: groups make them advance
// together; seeds: replicates every point. docs/sweep.md describes the format.
//
// Load parses a sweep file, Sweep.Expand resolves every run (each a canonical scenario with a
// stable id: 12 hex digits of the SHA-256 of the scenario without its seed, then -s<seed>),
// and Sweep.Validate checks all of them with the Engine before anything runs, blaming the
// line of the sweep file at fault. RunLocal runs them on a pool of workers; Merge builds the
// table from what the runs left in DIR; RunSlurm and K8sJob spread the runs over a cluster.
//
// # Crash safety
//
// A run counts only once its record DIR/runs/<id>.json is committed: written to a temporary
// file in the same directory, synced, renamed over the final name, and the directory synced.
// Killing a sweep at any moment therefore loses no finished run and cannot leave half a
// record; running the same command again skips the runs that ended ok (failed runs run
// again) and the results table is rebuilt from DIR/runs at the end, so every run appears
// exactly once. Run ids hash the scenario, so editing the sweep file (a new axis value, say)
// reuses every run that did not change.
//
// # Clusters
//
// --shard i/N runs the runs whose index, with runs sorted by id, is i mod N. A shard whose
// runs all end ok commits DIR/shards/<i>.done; the shard that finds all N markers writes the
// results table. --slurm writes DIR/sweep.sbatch, a job array whose task i runs shard i,
// submits it with sbatch, polls squeue until the tasks have left the queue, resubmits the
// tasks that left without their marker (a bounded number of times) and merges the table. It
// needs no accounting (no sacct). --k8s-manifest writes an Indexed Job that does the same on
// Kubernetes.
//
// Both assume that DIR is on a filesystem that every node mounts at the same path (NFS,
// Lustre, GPFS, a ReadWriteMany volume), as on real clusters: tasks commit their records
// there and the driver reads them back. The commit protocol relies on rename being atomic,
// which these filesystems provide within one directory.
package sweep
