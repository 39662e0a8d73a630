package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

// TestK8sManifest generates the Indexed Job and reads it back as Kubernetes would.
func TestK8sManifest(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	stdout, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", "sweep.yaml", "--out", "results/rate",
		"--k8s-manifest", "job.yaml", "--k8s-image", "registry.example/fabricsim:1.2", "--k8s-parallelism", "3",
		"--k8s-pvc", "sweeps", "--tasks", "8", "--cpus-per-task", "4", "--max-retries", "3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(stdout) != "job.yaml" {
		t.Errorf("printed %q", stdout)
	}
	if _, err := os.Stat("results"); !os.IsNotExist(err) {
		t.Errorf("--k8s-manifest created the output directory locally")
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			CompletionMode       string `yaml:"completionMode"`
			Completions          int    `yaml:"completions"`
			Parallelism          int    `yaml:"parallelism"`
			BackoffLimitPerIndex int    `yaml:"backoffLimitPerIndex"`
			Template             struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Image      string   `yaml:"image"`
						WorkingDir string   `yaml:"workingDir"`
						Command    []string `yaml:"command"`
						Env        []struct {
							Name      string `yaml:"name"`
							ValueFrom struct {
								FieldRef struct {
									FieldPath string `yaml:"fieldPath"`
								} `yaml:"fieldRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
						Resources struct {
							Requests map[string]string `yaml:"requests"`
						} `yaml:"resources"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
					Volumes []struct {
						Name                  string `yaml:"name"`
						PersistentVolumeClaim struct {
							ClaimName string `yaml:"claimName"`
						} `yaml:"persistentVolumeClaim"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, "job.yaml")))
	if err := dec.Decode(&job); err != nil {
		t.Fatal(err)
	}
	s, _ := Load("sweep.yaml")
	runs, _ := s.Expand()
	digest := Digest(runs)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Errorf("apiVersion %q kind %q", job.APIVersion, job.Kind)
	}
	if job.Metadata.Name != "fabricsim-rate-vs-size-"+digest[:8] || len(job.Metadata.Name) > 63 {
		t.Errorf("name %q", job.Metadata.Name)
	}
	sp := job.Spec
	if sp.CompletionMode != "Indexed" || sp.Completions != 8 || sp.Parallelism != 3 || sp.BackoffLimitPerIndex != 3 {
		t.Errorf("spec %+v", sp)
	}
	pod := sp.Template.Spec
	if pod.RestartPolicy != "Never" || len(pod.Containers) != 1 || len(pod.Volumes) != 1 {
		t.Fatalf("pod %+v", pod)
	}
	c := pod.Containers[0]
	wantCmd := []string{"/bin/sh", "-c", `exec fabricsim sweep sweep.yaml --out results/rate --shard "${JOB_COMPLETION_INDEX}/8" --jobs 4 --sweep-digest ` + digest}
	if !reflect.DeepEqual(c.Command, wantCmd) {
		t.Errorf("command %q\nwant %q", c.Command, wantCmd)
	}
	if c.Image != "registry.example/fabricsim:1.2" || c.WorkingDir != "/data" || c.Resources.Requests["cpu"] != "4" {
		t.Errorf("container %+v", c)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", c.Env)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/data" || c.VolumeMounts[0].Name != pod.Volumes[0].Name || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "sweeps" {
		t.Errorf("volume %+v mounted as %+v", pod.Volumes, c.VolumeMounts)
	}
	// The command, run by a shell in index 5, runs shard 5/8 of this sweep.
	sh := strings.ReplaceAll(c.Command[2], "${JOB_COMPLETION_INDEX}", "5")
	if !strings.Contains(sh, `--shard "5/8"`) {
		t.Errorf("shell command %q", sh)
	}
}

// TestK8sManifestOutsideClaim: a manifest whose --out or sweep file lies outside the volume
// claim (an absolute path elsewhere, or .. out of it) is refused: the pods could not read the
// sweep or keep their results.
func TestK8sManifestOutsideClaim(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	for _, tc := range []struct {
		sweep, out, want string
	}{
		{"sweep.yaml", "results", ""},
		{"sweep.yaml", "/data/results", ""},
		{"sweep.yaml", "/tmp/results", "--out /tmp/results lies outside the volume claim fabricsim-sweep mounted at /data"},
		{"sweep.yaml", "../results", "--out ../results lies outside the volume claim"},
		{"sweep.yaml", "/datasets/results", "--out /datasets/results lies outside"},
		{filepath.Join(dir, "sweep.yaml"), "results", "the sweep file " + filepath.Join(dir, "sweep.yaml") + " lies outside"},
	} {
		os.Remove("job.yaml")
		_, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", tc.sweep, "--out", tc.out, "--k8s-manifest", "job.yaml")
		if tc.want == "" {
			if err != nil {
				t.Errorf("--out %s: %v", tc.out, err)
			}
			continue
		}
		var se *Error
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sweep %s --out %s: %v; want a usage error with %q", tc.sweep, tc.out, err, tc.want)
		}
		if _, serr := os.Stat("job.yaml"); serr == nil {
			t.Errorf("--out %s: the manifest was written anyway", tc.out)
		}
	}
}
