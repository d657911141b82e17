// Package k8sjob renders a sweep grid as a Kubernetes Indexed Job: one pod
// per shard, each running the same blis binary on its slice of the grid
// (`blis sweep GRID --shard-index I --shard-count N`) and writing its shard
// store to a shared volume, where `blis sweep merge` later combines them.
//
// The objects are the official typed structs of k8s.io/api (batch/v1,
// core/v1) marshalled to YAML, so what a cluster receives is exactly what
// the API types describe; the tests decode the output strictly with the
// apimachinery codecs and apply the rules of Kubernetes' own Job validation.
package k8sjob

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"blis/internal/inputerr"
)

// Defaults a serving engineer can start from: a sweep point is one CPU-bound
// simulation, so two cores and 4 GiB per shard hold a worker pool of two.
const (
	DefaultImage       = "blis:latest"
	DefaultCPU         = "2"
	DefaultMemory      = "4Gi"
	DefaultTTL         = 7 * 24 * 3600 // finished Jobs and their pods are garbage-collected after a week
	DefaultRetries     = 2             // per index: node loss or OOM, not bad input (exit 2 fails the index at once)
	DefaultCopyImage   = "busybox:1.37"
	maxDefaultParallel = 8
	// MaxShards is Kubernetes' soft limit on completions above which an
	// Indexed Job with backoffLimitPerIndex also needs maxFailedIndexes and
	// parallelism ≤ 10,000 (completionsSoftLimit in
	// kubernetes/kubernetes pkg/apis/batch/validation/validation.go @
	// v1.37.2). A sweep never needs more shards than that.
	MaxShards = 100_000

	// Paths inside the pod.
	gridDir    = "/grid"
	resultsDir = "/results"

	containerName = "blis"
	// nonRootUID is the "nonroot" user of the distroless base image the
	// Dockerfile uses; fsGroup makes the shared volume writable by it.
	nonRootUID = 65532

	// exitBadInput is blis's exit status for bad input (cmd/blis run):
	// the same grid fails the same way on every retry.
	exitBadInput = 2

	// maxConfigMapBytes is core.MaxSecretSize, the cap on a ConfigMap's data
	// (kubernetes/kubernetes pkg/apis/core/types.go @ v1.37.2).
	maxConfigMapBytes = 1 << 20
)

// Volume kinds for the shard stores.
const (
	VolumePVC      = "pvc"      // a ReadWriteMany claim every pod mounts
	VolumeEmptyDir = "emptyDir" // per-pod scratch: a dry run whose stores vanish with the pods
)

// Options is everything Render needs. Zero values take the defaults above;
// the keys in error messages are the `blis sweep k8s` flags.
type Options struct {
	GridFile string // path of the grid file (its base name names the file in the pods)
	Grid     []byte // the grid file's text, embedded in a ConfigMap
	// Scenario is the text of the file the grid's `scenario:` key names,
	// embedded beside the grid (nil when the grid has none).
	Scenario []byte

	Name         string // Job name; "" = the grid's name, DNS-1123 sanitized
	Namespace    string // "" = the namespace kubectl applies to
	Image        string
	Shards       int
	Parallelism  int    // 0 = min(Shards, 8)
	CPU          string // requests = limits: Guaranteed QoS keeps a shard's speed steady
	Memory       string
	Volume       string // VolumePVC or VolumeEmptyDir
	PVC          string // claim name for VolumePVC
	PVCSize      string // when set, the claim itself is rendered too (ReadWriteMany)
	StorageClass string
	// Retries (backoffLimitPerIndex) and TTLSeconds
	// (ttlSecondsAfterFinished) are taken as given: the CLI's flags default
	// to DefaultRetries and DefaultTTL.
	Retries    int
	TTLSeconds int
	CopyImage  string
}

// Grid is what Render reads from a grid file: its name and the scenario
// file it refers to. Full validation of the grid is `blis sweep`'s.
type Grid struct {
	Name     string
	Scenario string // the `scenario:` key, "" when absent
}

// ParseGrid reads the keys of a grid file the rendering needs. The file must
// be a YAML mapping; other keys are left to `blis sweep`.
func ParseGrid(file string, data []byte) (Grid, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Grid{}, &inputerr.Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Grid{}, &inputerr.Error{File: file, Msg: "a grid is a YAML mapping (name, base, axes, load, ...)"}
	}
	var g Grid
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch k.Value {
		case "name", "scenario":
			if v.Kind != yaml.ScalarNode {
				return Grid{}, &inputerr.Error{File: file, Line: v.Line, Key: k.Value, Msg: "must be a string"}
			}
			if k.Value == "name" {
				g.Name = v.Value
			} else {
				g.Scenario = v.Value
			}
		}
	}
	return g, nil
}

// SanitizeName turns s into a DNS-1123 label of at most max characters:
// lower case, every run of other characters one '-', no '-' at either end.
// It returns "" when nothing is left.
func SanitizeName(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	return out
}

// plan is the checked form of Options.
type plan struct {
	Options
	gridKey, scenarioKey string
	cpu, memory          resource.Quantity
	labels               map[string]string
}

// check applies defaults and refuses bad options with the flag, the value
// and what is allowed.
func check(opt Options, grid Grid) (*plan, error) {
	p := &plan{Options: opt}
	bad := func(key, val, msg string) error { return &inputerr.Error{Key: key, Value: val, Msg: msg} }
	if p.Shards < 1 || p.Shards > MaxShards {
		return nil, bad("--shards", strconv.Itoa(p.Shards), fmt.Sprintf("allowed: 1 to %d (one pod per shard)", MaxShards))
	}
	if p.Parallelism == 0 {
		p.Parallelism = min(p.Shards, maxDefaultParallel)
	}
	if p.Parallelism < 1 || p.Parallelism > p.Shards {
		return nil, bad("--parallelism", strconv.Itoa(p.Parallelism), fmt.Sprintf("allowed: 1 to --shards (%d)", p.Shards))
	}
	if p.Image == "" {
		p.Image = DefaultImage
	}
	if strings.ContainsAny(p.Image, " \t\n") {
		return nil, bad("--image", p.Image, "an image reference has no spaces")
	}
	if p.CopyImage == "" {
		p.CopyImage = DefaultCopyImage
	}

	// The job controller names each pod's hostname <job>-<index>, which must
	// be a DNS-1123 label (validateNameAllowsCompletions in
	// pkg/apis/batch/validation/validation.go @ v1.37.2): leave room for the
	// largest index.
	maxName := validation.DNS1123LabelMaxLength - len("-"+strconv.Itoa(p.Shards-1))
	switch {
	case p.Name != "":
		if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
			return nil, bad("--name", p.Name, "not a DNS-1123 label: "+errs[0])
		}
		if len(p.Name) > maxName {
			return nil, bad("--name", p.Name, fmt.Sprintf("at most %d characters with %d shards (pod hostnames are NAME-INDEX, at most 63)", maxName, p.Shards))
		}
	default:
		src := grid.Name
		if src == "" {
			src = strings.TrimSuffix(filepath.Base(p.GridFile), filepath.Ext(p.GridFile))
		}
		// Room for the "-grid" and "-results" suffixes of the other objects.
		p.Name = SanitizeName(src, min(maxName, validation.DNS1123LabelMaxLength-len("-results")))
		if p.Name == "" {
			return nil, &inputerr.Error{File: p.GridFile, Key: "name", Value: grid.Name, Msg: "leaves no DNS-1123 name (a-z, 0-9, '-'); give --name"}
		}
	}
	if p.Namespace != "" {
		if errs := validation.IsDNS1123Label(p.Namespace); len(errs) > 0 {
			return nil, bad("--namespace", p.Namespace, "not a DNS-1123 label: "+errs[0])
		}
	}

	var err error
	if p.CPU == "" {
		p.CPU = DefaultCPU
	}
	if p.cpu, err = resource.ParseQuantity(p.CPU); err != nil || p.cpu.Sign() <= 0 {
		return nil, bad("--cpu", p.CPU, "a positive Kubernetes quantity such as 2, 1500m")
	}
	if p.Memory == "" {
		p.Memory = DefaultMemory
	}
	if p.memory, err = resource.ParseQuantity(p.Memory); err != nil || p.memory.Sign() <= 0 {
		return nil, bad("--memory", p.Memory, "a positive Kubernetes quantity such as 4Gi, 512Mi")
	}

	switch p.Volume {
	case "":
		if p.PVC == "" {
			return nil, bad("--pvc", "", "give the ReadWriteMany claim the shard stores go to (or --results-volume emptyDir for a dry run)")
		}
		p.Volume = VolumePVC
	case VolumePVC:
		if p.PVC == "" {
			return nil, bad("--pvc", "", "--results-volume pvc needs the claim's name")
		}
	case VolumeEmptyDir:
		if p.PVC != "" || p.PVCSize != "" {
			return nil, bad("--results-volume", p.Volume, "an emptyDir takes no --pvc or --pvc-size")
		}
	default:
		return nil, bad("--results-volume", p.Volume, "allowed: pvc, emptyDir")
	}
	if p.PVC != "" {
		if errs := validation.IsDNS1123Subdomain(p.PVC); len(errs) > 0 {
			return nil, bad("--pvc", p.PVC, "not a DNS-1123 subdomain: "+errs[0])
		}
	}
	if p.PVCSize != "" {
		if q, err := resource.ParseQuantity(p.PVCSize); err != nil || q.Sign() <= 0 {
			return nil, bad("--pvc-size", p.PVCSize, "a positive Kubernetes quantity such as 20Gi")
		}
	} else if p.StorageClass != "" {
		return nil, bad("--storage-class", p.StorageClass, "only used with --pvc-size (the claim is rendered only then)")
	}
	if p.StorageClass != "" {
		if errs := validation.IsDNS1123Subdomain(p.StorageClass); len(errs) > 0 {
			return nil, bad("--storage-class", p.StorageClass, "not a DNS-1123 subdomain: "+errs[0])
		}
	}
	if p.Retries < 0 {
		return nil, bad("--retries", strconv.Itoa(p.Retries), "allowed: 0 or more")
	}
	if p.TTLSeconds < 0 {
		return nil, bad("--ttl", strconv.Itoa(p.TTLSeconds), "allowed: 0 or more seconds")
	}

	p.gridKey = configMapKey(p.GridFile, "grid.yaml")
	if grid.Scenario != "" {
		// The pods see only what the ConfigMap holds, in one flat folder.
		if path.Base(grid.Scenario) != grid.Scenario || filepath.Base(grid.Scenario) != grid.Scenario {
			return nil, &inputerr.Error{File: p.GridFile, Key: "scenario", Value: grid.Scenario,
				Msg: "the pods read the grid from a ConfigMap: keep the scenario file beside the grid (scenario: NAME.yaml) or put its keys under base"}
		}
		p.scenarioKey = grid.Scenario
		if len(validation.IsConfigMapKey(p.scenarioKey)) > 0 || p.scenarioKey == p.gridKey {
			return nil, &inputerr.Error{File: p.GridFile, Key: "scenario", Value: grid.Scenario, Msg: "not usable as a ConfigMap key (letters, digits, '-', '_', '.'; not the grid's own name)"}
		}
	}
	if n := len(p.Grid) + len(p.Scenario); n > maxConfigMapBytes {
		return nil, &inputerr.Error{File: p.GridFile, Msg: fmt.Sprintf("%d bytes with its scenario: over the 1 MiB a ConfigMap holds", n)}
	}
	p.labels = map[string]string{
		"app.kubernetes.io/name":       "blis",
		"app.kubernetes.io/component":  "sweep",
		"app.kubernetes.io/instance":   p.Name,
		"app.kubernetes.io/managed-by": "blis",
	}
	return p, nil
}

// configMapKey is the file's base name when Kubernetes accepts it as a
// ConfigMap key, else fallback.
func configMapKey(file, fallback string) string {
	k := filepath.Base(file)
	if file == "" || len(validation.IsConfigMapKey(k)) > 0 {
		return fallback
	}
	return k
}

// JobName is the name Render gives the Job for these options (the name
// `kubectl wait job/NAME` takes).
func JobName(opt Options, grid Grid) (string, error) {
	p, err := check(opt, grid)
	if err != nil {
		return "", err
	}
	return p.Name, nil
}

// Render writes the multi-document YAML `kubectl apply -f` takes: the
// ConfigMap with the grid, the claim when opt.PVCSize is set, and the
// Indexed Job.
func Render(w io.Writer, opt Options, grid Grid) error {
	p, err := check(opt, grid)
	if err != nil {
		return err
	}
	objs := []any{p.configMap()}
	if p.PVCSize != "" {
		objs = append(objs, p.claim())
	}
	objs = append(objs, p.job())
	header := fmt.Sprintf("# blis sweep k8s: grid %s as Indexed Job %q, %d shards, %d at a time.\n", p.gridKey, p.Name, p.Shards, p.Parallelism)
	return writeDocs(w, header, objs)
}

// RenderCopyPod writes a Pod that mounts the shard stores' claim read-only
// and sleeps, so `kubectl cp` (which needs tar in the container; the blis
// image has none) can copy the stores off the volume.
func RenderCopyPod(w io.Writer, opt Options, grid Grid) error {
	p, err := check(opt, grid)
	if err != nil {
		return err
	}
	if p.Volume != VolumePVC {
		return &inputerr.Error{Key: "--copy-pod", Msg: "needs --pvc: an emptyDir is gone with the Job's pods"}
	}
	header := fmt.Sprintf("# blis sweep k8s --copy-pod: the claim %q read-only at %s; delete the pod when done.\n", p.PVC, resultsDir)
	return writeDocs(w, header, []any{p.copyPod()})
}

func writeDocs(w io.Writer, header string, objs []any) error {
	var buf bytes.Buffer
	buf.WriteString(header)
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := sigsyaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("marshal %T: %w", o, err)
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (p *plan) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: p.labels}
}

// copyLabels are the Job's labels with another component, so selecting the
// Job's pods by label never picks the copy pod.
func (p *plan) copyLabels() map[string]string {
	l := make(map[string]string, len(p.labels))
	for k, v := range p.labels {
		l[k] = v
	}
	l["app.kubernetes.io/component"] = "sweep-results"
	return l
}

func (p *plan) configMap() *corev1.ConfigMap {
	data := map[string]string{p.gridKey: string(p.Grid)}
	if p.scenarioKey != "" {
		data[p.scenarioKey] = string(p.Scenario)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: p.meta(p.Name + "-grid"),
		Data:       data,
	}
}

func (p *plan) claim() *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: p.meta(p.PVC),
		Spec: corev1.PersistentVolumeClaimSpec{
			// Every shard's pod writes to it at once, possibly from many nodes.
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(p.PVCSize)},
			},
		},
	}
	if p.StorageClass != "" {
		c.Spec.StorageClassName = &p.StorageClass
	}
	return c
}

// resultsVolume is the volume the shard stores go to.
func (p *plan) resultsVolume(readOnly bool) corev1.Volume {
	v := corev1.Volume{Name: "results"}
	if p.Volume == VolumeEmptyDir {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	} else {
		v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.PVC, ReadOnly: readOnly}
	}
	return v
}

// args is the container's command line. $(JOB_COMPLETION_INDEX) is expanded
// by the kubelet: it replaces $(VAR) in command and args with the
// container's environment (ExpandContainerCommandAndArgs in
// kubernetes/kubernetes pkg/kubelet/container/helpers.go @ v1.37.2), and the
// Job controller adds JOB_COMPLETION_INDEX to every container's env of an
// Indexed Job's pods (addCompletionIndexEnvVariable in
// pkg/controller/job/indexed_job_utils.go @ v1.37.2). Passing the index
// explicitly keeps the command readable in `kubectl describe`.
func (p *plan) args() []string {
	return []string{
		"sweep", path.Join(gridDir, p.gridKey),
		"--out", path.Join(resultsDir, p.Name, "shard-$(JOB_COMPLETION_INDEX)"),
		"--shard-index", "$(JOB_COMPLETION_INDEX)",
		"--shard-count", strconv.Itoa(p.Shards),
		"--jobs", strconv.Itoa(p.workers()),
		"-q",
	}
}

// workers is the pod's CPU limit in whole cores, rounded up: the GOMAXPROCS
// the container's env sets, which is also `blis sweep`'s default. It is
// passed as --jobs all the same, so that the command line `kubectl
// describe` shows says how many points a pod runs at once: each worker
// holds a simulation, and more workers than cores only add memory and
// throttling.
func (p *plan) workers() int {
	return max(1, int((p.cpu.MilliValue()+999)/1000))
}

// StoreDir is where shard i's store lies on the results volume.
func StoreDir(jobName string, i int) string {
	return path.Join(resultsDir, jobName, "shard-"+strconv.Itoa(i))
}

func (p *plan) job() *batchv1.Job {
	qty := corev1.ResourceList{corev1.ResourceCPU: p.cpu, corev1.ResourceMemory: p.memory}
	indexed := batchv1.IndexedCompletion
	completions, parallelism := int32(p.Shards), int32(p.Parallelism)
	retries, ttl := int32(p.Retries), int32(p.TTLSeconds)
	noToken, nonRoot, noEscalation := false, true, false
	uid, fsGroup := int64(nonRootUID), int64(nonRootUID)
	cname := containerName
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: p.meta(p.Name),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &completions,
			Parallelism:    &parallelism,
			// Retries count per shard, so one flaky node does not fail
			// the sweep and one bad shard does not use up the others'.
			BackoffLimitPerIndex: &retries,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{
					// Bad input fails the same way every time: no retry.
					Action: batchv1.PodFailurePolicyActionFailIndex,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: &cname,
						Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
						Values:        []int32{exitBadInput},
					},
				},
				{
					// Preemption, eviction or a drained node is not the
					// shard's fault: rerun it without counting a retry.
					Action: batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
						{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
					},
				},
			}},
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever, // podFailurePolicy requires it
					AutomountServiceAccountToken: &noToken,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &nonRoot,
						RunAsUser:      &uid,
						FSGroup:        &fsGroup,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    containerName,
						Image:   p.Image,
						Command: []string{"blis"},
						Args:    p.args(),
						Env: []corev1.EnvVar{{
							// The sweep's worker pool is GOMAXPROCS wide;
							// the downward API gives the CPU limit
							// divided by 1 core, rounded up
							// (convertResourceCPUToString in
							// pkg/api/v1/resource/helpers.go @ v1.37.2).
							Name: "GOMAXPROCS",
							ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
								ContainerName: containerName,
								Resource:      "limits.cpu",
								Divisor:       resource.MustParse("1"),
							}},
						}},
						Resources: corev1.ResourceRequirements{Requests: qty, Limits: qty},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "grid", MountPath: gridDir, ReadOnly: true},
							{Name: "results", MountPath: resultsDir},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &noEscalation,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "grid", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: p.Name + "-grid"},
						}}},
						p.resultsVolume(false),
					},
				},
			},
		},
	}
}

func (p *plan) copyPod() *corev1.Pod {
	noToken := false
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-results", Namespace: p.Namespace, Labels: p.copyLabels()},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &noToken,
			Containers: []corev1.Container{{
				Name:         "copy",
				Image:        p.CopyImage,
				Command:      []string{"sleep", "86400"},
				VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: resultsDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{p.resultsVolume(true)},
		},
	}
}
