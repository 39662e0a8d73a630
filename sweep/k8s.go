package sweep

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// K8sOptions configure K8sJob.
type K8sOptions struct {
	// SweepArg and OutArg are the sweep file and output directory as the pod sees them;
	// relative paths resolve against MountPath, the pod's working directory.
	SweepArg, OutArg string
	// Image holds Binary; Subcommand selects this command (usually ["sweep"]).
	Image, Binary string
	Subcommand    []string
	// Tasks is the number of indexes (completions, shards); Parallelism how many pods run at
	// once (0: all); CPUsPerTask the CPUs each pod requests and its --jobs.
	Tasks, Parallelism, CPUsPerTask int
	// MaxRetries is the backoff limit per index.
	MaxRetries int
	// PVC names the claim mounted at MountPath; it must hold the sweep file and OutArg and be
	// mountable by many pods at once (ReadWriteMany).
	PVC, MountPath string
	RunTimeout     time.Duration
}

// The parts of a batch/v1 Job that K8sJob writes; field names follow the Kubernetes API.
type (
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sMeta struct {
		Name        string            `yaml:"name,omitempty"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	k8sJobSpec struct {
		CompletionMode       string      `yaml:"completionMode"`
		Completions          int         `yaml:"completions"`
		Parallelism          int         `yaml:"parallelism"`
		BackoffLimitPerIndex int         `yaml:"backoffLimitPerIndex"`
		Template             k8sTemplate `yaml:"template"`
	}
	k8sTemplate struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     k8sPod  `yaml:"spec"`
	}
	k8sPod struct {
		RestartPolicy string         `yaml:"restartPolicy"`
		Containers    []k8sContainer `yaml:"containers"`
		Volumes       []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name         string       `yaml:"name"`
		Image        string       `yaml:"image"`
		WorkingDir   string       `yaml:"workingDir"`
		Command      []string     `yaml:"command"`
		Env          []k8sEnv     `yaml:"env"`
		Resources    k8sResources `yaml:"resources"`
		VolumeMounts []k8sMount   `yaml:"volumeMounts"`
	}
	k8sEnv struct {
		Name      string       `yaml:"name"`
		ValueFrom k8sEnvSource `yaml:"valueFrom"`
	}
	k8sEnvSource struct {
		FieldRef struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests"`
	}
	k8sMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
)

// completionIndex is the Pod annotation that holds an Indexed Job's index.
const completionIndex = "batch.kubernetes.io/job-completion-index"

// K8sJob returns a batch/v1 Job (completionMode Indexed) in which index i runs shard i of
// Tasks. The index reaches the command through the environment variable
// JOB_COMPLETION_INDEX, set from the downward API (Kubernetes also sets it itself since 1.22)
// and expanded by a shell. The shard that finds every marker present writes the results
// table; otherwise run `fabricsim sweep SWEEP --out DIR --merge` afterwards.
func K8sJob(s *Sweep, runs []Run, o K8sOptions) ([]byte, error) {
	if o.Tasks < 1 || o.Tasks > len(runs) {
		return nil, flagError("--tasks %d: must be from 1 to the number of runs, %d", o.Tasks, len(runs))
	}
	if !strings.HasPrefix(o.MountPath, "/") {
		return nil, flagError("--k8s-mount %q: must be an absolute path", o.MountPath)
	}
	if o.PVC == "" || o.Image == "" || o.Binary == "" {
		return nil, flagError("--k8s-pvc, --k8s-image and --k8s-binary must not be empty")
	}
	// The pods see only the claim: a sweep file outside it cannot be read, results written
	// outside it are lost with the pod.
	for _, a := range []struct{ what, p string }{{"the sweep file", o.SweepArg}, {"--out", o.OutArg}} {
		if !insideMount(o.MountPath, a.p) {
			return nil, flagError("%s %s lies outside the volume claim %s mounted at %s: the pods cannot reach it; give a path inside %s (a relative path resolves inside it)",
				a.what, a.p, o.PVC, o.MountPath, o.MountPath)
		}
	}
	if len(o.Subcommand) == 0 {
		o.Subcommand = []string{"sweep"}
	}
	if o.CPUsPerTask < 1 {
		o.CPUsPerTask = 1
	}
	par := o.Parallelism
	if par == 0 || par > o.Tasks {
		par = o.Tasks
	}
	digest := Digest(runs)
	words := []string{"exec", shellQuote(o.Binary)}
	for _, w := range o.Subcommand {
		words = append(words, shellQuote(w))
	}
	words = append(words, shellQuote(path.Clean(toSlash(o.SweepArg))), "--out", shellQuote(path.Clean(toSlash(o.OutArg))),
		fmt.Sprintf(`--shard "${JOB_COMPLETION_INDEX}/%d"`, o.Tasks), "--jobs", strconv.Itoa(o.CPUsPerTask), "--sweep-digest", digest)
	if o.RunTimeout > 0 {
		words = append(words, "--run-timeout", o.RunTimeout.String())
	}
	name := "fabricsim-" + jobName(s.Name) + "-" + digest[:8]
	labels := map[string]string{"app.kubernetes.io/name": "fabricsim", "app.kubernetes.io/component": "sweep", "fabricsim/sweep-digest": digest}
	c := k8sContainer{
		Name:         "sweep",
		Image:        o.Image,
		WorkingDir:   o.MountPath,
		Command:      []string{"/bin/sh", "-c", strings.Join(words, " ")},
		Resources:    k8sResources{Requests: map[string]string{"cpu": strconv.Itoa(o.CPUsPerTask)}},
		VolumeMounts: []k8sMount{{Name: "sweep-data", MountPath: o.MountPath}},
	}
	env := k8sEnv{Name: "JOB_COMPLETION_INDEX"}
	env.ValueFrom.FieldRef.FieldPath = "metadata.annotations['" + completionIndex + "']"
	c.Env = []k8sEnv{env}
	vol := k8sVolume{Name: "sweep-data"}
	vol.PersistentVolumeClaim.ClaimName = o.PVC
	job := k8sJob{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata: k8sMeta{Name: name, Labels: labels, Annotations: map[string]string{
			"fabricsim/sweep": s.Name, "fabricsim/runs": strconv.Itoa(len(runs)),
		}},
		Spec: k8sJobSpec{
			CompletionMode:       "Indexed",
			Completions:          o.Tasks,
			Parallelism:          par,
			BackoffLimitPerIndex: o.MaxRetries,
			Template: k8sTemplate{
				Metadata: k8sMeta{Labels: labels},
				Spec:     k8sPod{RestartPolicy: "Never", Containers: []k8sContainer{c}, Volumes: []k8sVolume{vol}},
			},
		},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Kubernetes Indexed Job for fabricsim sweep %q (%d runs in %d shards), written by --k8s-manifest.\n", s.Name, len(runs), o.Tasks)
	fmt.Fprintf(&b, "# Claim %s, mounted at %s (the working directory), must hold %s and %s.\n", o.PVC, o.MountPath, o.SweepArg, o.OutArg)
	fmt.Fprintf(&b, "# Apply with: kubectl apply -f FILE; backoffLimitPerIndex needs Kubernetes 1.29 or later.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func toSlash(p string) string { return strings.ReplaceAll(p, "\\", "/") }

// insideMount reports whether p, as the pod resolves it (relative to mount, its working
// directory), lies under mount.
func insideMount(mount, p string) bool {
	m := path.Clean(toSlash(mount))
	q := path.Clean(toSlash(p))
	if !path.IsAbs(q) {
		q = path.Join(m, q)
	}
	return m == "/" || q == m || strings.HasPrefix(q, m+"/")
}
