package k8sjob

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"blis/internal/inputerr"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (review the diff)")

const exampleGrid = "testdata/llama70b-h100.yaml"

// baseOptions are the CLI's defaults for the example grid.
func baseOptions(t *testing.T) (Options, Grid) {
	t.Helper()
	data, err := os.ReadFile(exampleGrid)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGrid(exampleGrid, data)
	if err != nil {
		t.Fatal(err)
	}
	return Options{GridFile: exampleGrid, Grid: data, Image: "registry.example.com/blis:v1", Shards: 16,
		CPU: DefaultCPU, Memory: DefaultMemory, PVC: "sweeps", Retries: DefaultRetries, TTLSeconds: DefaultTTL}, g
}

func render(t *testing.T, opt Options, g Grid) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, opt, g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (go test ./k8sjob -update, then review the diff):\n%s", file, got)
	}
}

// TestRenderGolden pins the rendered manifests of the example grid.
func TestRenderGolden(t *testing.T) {
	opt, g := baseOptions(t)
	golden(t, "llama70b-h100.job.yaml", render(t, opt, g))
	var buf bytes.Buffer
	if err := RenderCopyPod(&buf, opt, g); err != nil {
		t.Fatal(err)
	}
	golden(t, "llama70b-h100.copy-pod.yaml", buf.Bytes())
}

// TestRenderDecodesAndValidates decodes every rendering strictly with the
// official types and applies the API server's create-time rules.
func TestRenderDecodesAndValidates(t *testing.T) {
	opt, g := baseOptions(t)
	variants := map[string]func(*Options){
		"defaults":  func(*Options) {},
		"one shard": func(o *Options) { o.Shards = 1 },
		"claim rendered": func(o *Options) {
			o.PVCSize, o.StorageClass = "50Gi", "nfs-client"
		},
		"emptyDir dry run": func(o *Options) { o.PVC, o.Volume = "", VolumeEmptyDir },
		"namespace, fractional cpu": func(o *Options) {
			o.Namespace, o.CPU, o.Memory, o.Parallelism = "capacity", "1500m", "3Gi", 16
		},
		"max shards": func(o *Options) { o.Shards, o.Name = MaxShards, "sweep" },
		"no retries": func(o *Options) { o.Retries, o.TTLSeconds = 0, 0 },
	}
	for name, mod := range variants {
		t.Run(name, func(t *testing.T) {
			o := opt
			mod(&o)
			objs, err := decodeAll(render(t, o, g))
			if err != nil {
				t.Fatal(err)
			}
			want := 2
			if o.PVCSize != "" {
				want = 3
			}
			if len(objs) != want {
				t.Fatalf("%d objects, want %d", len(objs), want)
			}
			var job *batchv1.Job
			for _, obj := range objs {
				if errs := validateObject(obj); len(errs) > 0 {
					t.Errorf("%T: %v", obj, errs.ToAggregate())
				}
				if j, ok := obj.(*batchv1.Job); ok {
					job = j
				}
			}
			if job == nil {
				t.Fatal("no Job rendered")
			}
			if *job.Spec.Completions != int32(o.Shards) || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
				t.Errorf("completions %d mode %s, want %d Indexed", *job.Spec.Completions, *job.Spec.CompletionMode, o.Shards)
			}
			wantPar := o.Parallelism
			if wantPar == 0 {
				wantPar = min(o.Shards, 8)
			}
			if *job.Spec.Parallelism != int32(wantPar) {
				t.Errorf("parallelism %d, want %d", *job.Spec.Parallelism, wantPar)
			}
			c := job.Spec.Template.Spec.Containers[0]
			cpu := resource.MustParse(o.CPU)
			wantJobs := "--jobs " + strconv.FormatInt((cpu.MilliValue()+999)/1000, 10) + " "
			if !strings.Contains(strings.Join(c.Args, " "), wantJobs) {
				t.Errorf("args %q lack %q (whole cores of --cpu %s)", c.Args, wantJobs, o.CPU)
			}
			if c.Resources.Limits.Cpu().Cmp(*c.Resources.Requests.Cpu()) != 0 {
				t.Errorf("cpu request %s ≠ limit %s", c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu())
			}
		})
	}
}

// TestPodCommand checks the shard's command line and that every $(VAR) in
// it is one the pod will have: the kubelet leaves an unknown reference as
// literal text.
func TestPodCommand(t *testing.T) {
	opt, g := baseOptions(t)
	objs, err := decodeAll(render(t, opt, g))
	if err != nil {
		t.Fatal(err)
	}
	job := objs[1].(*batchv1.Job)
	c := job.Spec.Template.Spec.Containers[0]
	got := strings.Join(append(c.Command, c.Args...), " ")
	want := "blis sweep /grid/llama70b-h100.yaml --out /results/llama-70b-h100/shard-$(JOB_COMPLETION_INDEX) --shard-index $(JOB_COMPLETION_INDEX) --shard-count 16 --jobs 2 -q"
	if got != want {
		t.Errorf("command\n got %s\nwant %s", got, want)
	}
	// The Job controller adds JOB_COMPLETION_INDEX itself; declared vars
	// are the others a $(VAR) may name.
	env := map[string]bool{"JOB_COMPLETION_INDEX": true}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, a := range c.Args {
		for rest := a; ; {
			i := strings.Index(rest, "$(")
			if i < 0 {
				break
			}
			j := strings.IndexByte(rest[i:], ')')
			if j < 0 {
				t.Fatalf("unclosed $( in %q", a)
			}
			if name := rest[i+2 : i+j]; !env[name] {
				t.Errorf("arg %q names $(%s), which the pod does not have", a, name)
			}
			rest = rest[i+j:]
		}
	}
	if got := StoreDir(job.Name, 3); got != "/results/llama-70b-h100/shard-3" {
		t.Errorf("StoreDir = %s", got)
	}
	// Bad input (exit 2) fails its index at once; disruptions are ignored.
	rules := job.Spec.PodFailurePolicy.Rules
	if rules[0].Action != batchv1.PodFailurePolicyActionFailIndex || rules[0].OnExitCodes.Values[0] != 2 {
		t.Errorf("first rule %+v, want FailIndex on exit code 2", rules[0])
	}
	if rules[1].Action != batchv1.PodFailurePolicyActionIgnore || rules[1].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("second rule %+v, want Ignore on DisruptionTarget", rules[1])
	}
	if e := c.Env[0]; e.Name != "GOMAXPROCS" || e.ValueFrom.ResourceFieldRef.Resource != "limits.cpu" {
		t.Errorf("env %+v, want GOMAXPROCS from limits.cpu", e)
	}
}

// TestValidatorCatches shows the validator refuses what the API server
// refuses, so a passing validation means something.
func TestValidatorCatches(t *testing.T) {
	opt, g := baseOptions(t)
	objs, err := decodeAll(render(t, opt, g))
	if err != nil {
		t.Fatal(err)
	}
	base := objs[1].(*batchv1.Job)
	for _, tc := range []struct {
		name, field string
		mod         func(*batchv1.Job)
	}{
		{"restart Always", "spec.template.spec.restartPolicy", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
		{"OnFailure with podFailurePolicy", "spec.template.spec.restartPolicy", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }},
		{"Indexed without completions", "spec.completions", func(j *batchv1.Job) { j.Spec.Completions = nil }},
		{"FailIndex without backoffLimitPerIndex", "spec.podFailurePolicy.rules[0].action", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = nil }},
		{"exit code 0 with In", "spec.podFailurePolicy.rules[0].onExitCodes.values[0]", func(j *batchv1.Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int32{0} }},
		{"unknown container in rule", "spec.podFailurePolicy.rules[0].onExitCodes.containerName", func(j *batchv1.Job) {
			n := "other"
			j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName = &n
		}},
		{"hostname too long", "metadata.name", func(j *batchv1.Job) { j.Name = strings.Repeat("a", 62) }},
		{"conflicting job-name label", "spec.template.metadata.labels[batch.kubernetes.io/job-name]", func(j *batchv1.Job) {
			j.Spec.Template.Labels = map[string]string{batchv1.JobNameLabel: "other"}
		}},
		{"mount of no volume", "spec.template.spec.containers[0].volumeMounts[0].name", func(j *batchv1.Job) { j.Spec.Template.Spec.Volumes = j.Spec.Template.Spec.Volumes[1:] }},
		{"over 100000 completions without maxFailedIndexes", "spec.maxFailedIndexes", func(j *batchv1.Job) {
			n := int32(completionsSoftLimit + 1)
			j.Spec.Completions = &n
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := base.DeepCopy()
			tc.mod(j)
			errs := validateObject(j)
			found := false
			for _, e := range errs {
				found = found || e.Field == tc.field
			}
			if !found {
				t.Errorf("no error on %s; got %v", tc.field, errs.ToAggregate())
			}
		})
	}
}

// TestBadOptions: every bad option is an input error naming the flag and
// the value.
func TestBadOptions(t *testing.T) {
	opt, g := baseOptions(t)
	for _, tc := range []struct {
		name string
		mod  func(*Options, *Grid)
		want string
	}{
		{"zero shards", func(o *Options, _ *Grid) { o.Shards = 0 }, `--shards "0": allowed: 1 to 100000`},
		{"too many shards", func(o *Options, _ *Grid) { o.Shards = MaxShards + 1 }, `--shards "100001"`},
		{"parallelism over shards", func(o *Options, _ *Grid) { o.Parallelism = 17 }, `--parallelism "17": allowed: 1 to --shards (16)`},
		{"negative parallelism", func(o *Options, _ *Grid) { o.Parallelism = -1 }, `--parallelism "-1"`},
		{"bad name", func(o *Options, _ *Grid) { o.Name = "Sweep_1" }, `--name "Sweep_1": not a DNS-1123 label`},
		{"name too long for the shards", func(o *Options, _ *Grid) { o.Name = strings.Repeat("a", 61) }, "at most 60 characters with 16 shards"},
		{"grid name with nothing usable", func(o *Options, g *Grid) { g.Name = "__" }, `name "__": leaves no DNS-1123 name`},
		{"bad namespace", func(o *Options, _ *Grid) { o.Namespace = "Prod" }, `--namespace "Prod"`},
		{"bad cpu", func(o *Options, _ *Grid) { o.CPU = "two" }, `--cpu "two": a positive Kubernetes quantity`},
		{"zero cpu", func(o *Options, _ *Grid) { o.CPU = "0" }, `--cpu "0"`},
		{"bad memory", func(o *Options, _ *Grid) { o.Memory = "4GB!" }, `--memory "4GB!"`},
		{"no volume", func(o *Options, _ *Grid) { o.PVC = "" }, "--pvc: give the ReadWriteMany claim"},
		{"unknown volume kind", func(o *Options, _ *Grid) { o.Volume = "hostPath" }, `--results-volume "hostPath": allowed: pvc, emptyDir`},
		{"emptyDir with a claim", func(o *Options, _ *Grid) { o.Volume = VolumeEmptyDir }, `--results-volume "emptyDir": an emptyDir takes no --pvc`},
		{"bad claim name", func(o *Options, _ *Grid) { o.PVC = "My Claim" }, `--pvc "My Claim"`},
		{"bad claim size", func(o *Options, _ *Grid) { o.PVCSize = "lots" }, `--pvc-size "lots"`},
		{"storage class without size", func(o *Options, _ *Grid) { o.StorageClass = "nfs" }, `--storage-class "nfs": only used with --pvc-size`},
		{"negative retries", func(o *Options, _ *Grid) { o.Retries = -1 }, `--retries "-1"`},
		{"negative ttl", func(o *Options, _ *Grid) { o.TTLSeconds = -5 }, `--ttl "-5"`},
		{"image with a space", func(o *Options, _ *Grid) { o.Image = "blis latest" }, `--image "blis latest"`},
		{"scenario in another folder", func(o *Options, g *Grid) { g.Scenario = "../base.yaml" }, `scenario "../base.yaml": the pods read the grid from a ConfigMap`},
		{"grid too large", func(o *Options, _ *Grid) { o.Grid = bytes.Repeat([]byte("#"), maxConfigMapBytes+1) }, "over the 1 MiB a ConfigMap holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, gg := opt, g
			tc.mod(&o, &gg)
			err := Render(&bytes.Buffer{}, o, gg)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !errors.Is(err, inputerr.ErrBadInput) {
				t.Errorf("%v: not an input error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
	// The copy pod needs a claim to read.
	o := opt
	o.PVC, o.Volume = "", VolumeEmptyDir
	if err := RenderCopyPod(&bytes.Buffer{}, o, g); err == nil || !strings.Contains(err.Error(), "--copy-pod: needs --pvc") {
		t.Errorf("copy pod on emptyDir: %v", err)
	}
}

// TestScenarioFileEmbedded: a grid's scenario file travels in the same
// ConfigMap, so the pods find it beside the grid.
func TestScenarioFileEmbedded(t *testing.T) {
	opt, g := baseOptions(t)
	g.Scenario = "base.yaml"
	opt.Scenario = []byte("model: llama-3.1-70b\n")
	objs, err := decodeAll(render(t, opt, g))
	if err != nil {
		t.Fatal(err)
	}
	cm := objs[0].(*corev1.ConfigMap)
	if cm.Data["base.yaml"] != "model: llama-3.1-70b\n" || cm.Data["llama70b-h100.yaml"] == "" {
		t.Errorf("ConfigMap keys %v", cm.Data)
	}
	if errs := validateObject(cm); len(errs) > 0 {
		t.Error(errs.ToAggregate())
	}
}

func TestParseGrid(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       Grid
		err        string
	}{
		{"name and scenario", "name: a\nscenario: b.yaml\naxes: {x: [1]}\n", Grid{Name: "a", Scenario: "b.yaml"}, ""},
		{"no name", "axes: {x: [1]}\n", Grid{}, ""},
		{"not a mapping", "- a\n- b\n", Grid{}, "g.yaml: a grid is a YAML mapping"},
		{"empty", "", Grid{}, "g.yaml: a grid is a YAML mapping"},
		{"bad yaml", "name: [\n", Grid{}, "g.yaml: not valid YAML"},
		{"name not a string", "name: {a: 1}\n", Grid{}, "g.yaml:1: name: must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid("g.yaml", []byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, inputerr.ErrBadInput) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || g != tc.want {
				t.Fatalf("got %+v, %v; want %+v", g, err, tc.want)
			}
		})
	}
}

func TestSanitizeName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"Llama70B_H100 capacity", 63, "llama70b-h100-capacity"},
		{"Llama-70B_H100", 63, "llama-70b-h100"},
		{"--a..b--", 63, "a-b"},
		{"__", 63, ""},
		{"abc-def", 4, "abc"},
		{"Ünïcode grid", 63, "n-code-grid"},
	} {
		if got := SanitizeName(tc.in, tc.max); got != tc.want {
			t.Errorf("SanitizeName(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// FuzzSanitizeName: whatever the grid's name, the result is empty or a
// DNS-1123 label within the bound.
func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"Llama70B_H100 capacity", "", "---", "a" + strings.Repeat("-b", 40)} {
		f.Add(s, 63)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1 || max > 63 {
			return
		}
		got := SanitizeName(s, max)
		if got == "" {
			return
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 || len(got) > max {
			t.Fatalf("SanitizeName(%q, %d) = %q: %v", s, max, got, errs)
		}
	})
}

// FuzzRender: any grid text either fails with an input error or renders
// manifests that decode strictly and validate.
func FuzzRender(f *testing.F) {
	data, err := os.ReadFile(exampleGrid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("name: x\nscenario: s.yaml\n"))
	f.Add([]byte("name: \"\\u00e9\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGrid("g.yaml", data)
		if err != nil {
			if !errors.Is(err, inputerr.ErrBadInput) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		opt := Options{GridFile: "g.yaml", Grid: data, Image: DefaultImage, Shards: 3, CPU: "1", Memory: "1Gi", PVC: "p", Retries: 1, TTLSeconds: 60}
		var buf bytes.Buffer
		if err := Render(&buf, opt, g); err != nil {
			if !errors.Is(err, inputerr.ErrBadInput) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		objs, err := decodeAll(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if errs := validateObject(o); len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
		}
	})
}
