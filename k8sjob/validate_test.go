package k8sjob

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The rules below are the ones kube-apiserver applies when a Job, ConfigMap,
// PersistentVolumeClaim or Pod is created, restated for the v1 types:
// k8s.io/kubernetes cannot be imported as a library (its go.mod pins the
// staging modules at v0.0.0 behind replace directives), so its
// validation functions are mirrored here, each citing the function in
// kubernetes/kubernetes @ v1.37.2 it follows. The generic parts use
// apimachinery's own validation packages.

// decodeAll splits a multi-document YAML stream and decodes each document
// strictly (unknown or duplicate fields are errors) with the official
// scheme of batch/v1 and core/v1.
func decodeAll(data []byte) ([]runtime.Object, error) {
	dec, err := strictDecoder()
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(out)+1, err)
		}
		out = append(out, obj)
	}
}

// strictDecoder is built once: the scheme is the same for every test.
var strictDecoder = sync.OnceValues(func() (runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(), nil
})

// validateObject applies the create-time rules for the kinds Render emits.
func validateObject(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *batchv1.Job:
		return validateJobCreate(o)
	case *corev1.ConfigMap:
		return validateConfigMap(o)
	case *corev1.PersistentVolumeClaim:
		return validateClaim(o)
	case *corev1.Pod:
		errs := validateMeta(&o.ObjectMeta)
		return append(errs, validatePodSpec(&o.Spec, field.NewPath("spec"))...)
	}
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("unexpected kind %T", obj))}
}

// validateMeta is ValidateObjectMeta with DNS-subdomain names, as for Jobs,
// ConfigMaps, claims and pods. The API server fills an empty namespace from
// the request (kubectl's current namespace) before validating.
func validateMeta(m *metav1.ObjectMeta) field.ErrorList {
	c := m.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = metav1.NamespaceDefault
	}
	return apimachineryvalidation.ValidateObjectMeta(c, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// validateJobCreate follows ValidateJobCreate (pkg/apis/batch/validation/
// validation.go) after the registry's PrepareForCreate has generated the
// selector and the template's job labels (generateSelector in
// pkg/registry/batch/job/strategy.go).
func validateJobCreate(in *batchv1.Job) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateMeta(&in.ObjectMeta)
	// A rendered Job leaves the selector to the API server: a manual
	// selector would need manualSelector and could adopt other pods.
	if in.Spec.Selector != nil || in.Spec.ManualSelector != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), in.Spec.Selector, "leave the selector to the API server"))
	}
	job := in.DeepCopy()
	job.UID = "00000000-0000-0000-0000-000000000001"
	tl := job.Spec.Template.Labels
	if tl == nil {
		tl = map[string]string{}
	}
	generated := map[string]string{
		legacyJobNameLabel:         job.Name,
		batchv1.JobNameLabel:       job.Name,
		legacyControllerUidLabel:   string(job.UID),
		batchv1.ControllerUidLabel: string(job.UID),
	}
	for k, v := range generated {
		if _, set := tl[k]; !set {
			tl[k] = v
		}
	}
	job.Spec.Template.Labels = tl
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(job.UID)}}

	// validateGeneratedSelector: the template carries the generated labels
	// with the Job's values, and the selector matches them.
	for k, v := range generated {
		if tl[k] != v {
			errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels").Key(k), tl[k], "must be "+v))
		}
	}
	// ValidateJobSpec: the selector is valid and matches the template.
	errs = append(errs, metav1validation.ValidateLabelSelector(job.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err != nil || !sel.Matches(labels.Set(tl)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), tl, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validateJobSpec(&job.Spec, spec)...)

	// validateNameAllowsCompletions: pod hostnames are NAME-INDEX.
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion && job.Spec.Completions != nil && *job.Spec.Completions > 0 {
		host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

// The unprefixed labels the registry still sets (pkg/apis/batch/types.go;
// k8s.io/api/batch/v1 exports only the prefixed ones).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUidLabel = "controller-uid"
)

// Limits from pkg/apis/batch/validation/validation.go.
const (
	maxParallelismForIndexedJob                = 100000
	maxFailedIndexesForIndexedJob              = 100_000
	completionsSoftLimit                       = 100_000
	parallelismLimitForHighCompletions         = 10_000
	maxFailedIndexesLimitForHighCompletions    = 10_000
	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
)

func nonNegative(v *int32, p *field.Path) field.ErrorList {
	if v != nil && *v < 0 {
		return field.ErrorList{field.Invalid(p, *v, "must be greater than or equal to 0")}
	}
	return nil
}

// validateJobSpec follows validateJobSpec, validatePodFailurePolicy and
// validatePodReplacementPolicy (pkg/apis/batch/validation/validation.go).
func validateJobSpec(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, nonNegative(s.Parallelism, p.Child("parallelism"))...)
	errs = append(errs, nonNegative(s.Completions, p.Child("completions"))...)
	errs = append(errs, nonNegative(s.BackoffLimit, p.Child("backoffLimit"))...)
	errs = append(errs, nonNegative(s.TTLSecondsAfterFinished, p.Child("ttlSecondsAfterFinished"))...)
	errs = append(errs, nonNegative(s.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	errs = append(errs, nonNegative(s.MaxFailedIndexes, p.Child("maxFailedIndexes"))...)
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than or equal to 0"))
	}
	if s.MaxFailedIndexes != nil && s.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if s.CompletionMode != nil && *s.CompletionMode != batchv1.NonIndexedCompletion && !indexed {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *s.CompletionMode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed {
		if s.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
		}
		if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *s.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
		}
		if s.Completions != nil && s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > *s.Completions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to completions"))
		}
		if s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to 100000"))
		}
		if s.Completions != nil && *s.Completions > completionsSoftLimit && s.BackoffLimitPerIndex != nil {
			if s.MaxFailedIndexes == nil {
				errs = append(errs, field.Required(p.Child("maxFailedIndexes"), "must be specified when completions is above 100000"))
			}
			if s.Parallelism != nil && *s.Parallelism > parallelismLimitForHighCompletions {
				errs = append(errs, field.Invalid(p.Child("parallelism"), *s.Parallelism, "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"))
			}
			if s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
				errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"))
			}
		}
	} else {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(s, p.Child("podFailurePolicy"))...)
	}
	if s.PodReplacementPolicy != nil {
		rp := *s.PodReplacementPolicy
		if s.PodFailurePolicy != nil && rp != batchv1.Failed {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), rp, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		} else if rp != batchv1.Failed && rp != batchv1.TerminatingOrFailed {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), rp, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}
	tp := p.Child("template")
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&metav1.ObjectMeta{Name: "template", Namespace: "default", Labels: s.Template.Labels, Annotations: s.Template.Annotations}, true, apimachineryvalidation.NameIsDNSSubdomain, tp.Child("metadata"))...)
	errs = append(errs, validatePodSpec(&s.Template.Spec, tp.Child("spec"))...)
	rs := s.Template.Spec.RestartPolicy
	switch {
	case rs == corev1.RestartPolicyAlways || rs == "":
		errs = append(errs, field.Required(tp.Child("spec", "restartPolicy"), `valid values: "OnFailure", "Never"`))
	case rs != corev1.RestartPolicyOnFailure && rs != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rs, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && rs != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(tp.Child("spec", "restartPolicy"), rs, `only "Never" is supported when podFailurePolicy is specified`))
	}
	return errs
}

func validatePodFailurePolicy(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := s.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(p.Child("rules"), len(rules), maxPodFailurePolicyRules))
	}
	var names []string
	for _, c := range s.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range s.Template.Spec.InitContainers {
		names = append(names, c.Name)
	}
	actions := []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	for i, r := range rules {
		rp := p.Child("rules").Index(i)
		switch {
		case r.Action == "":
			errs = append(errs, field.Required(rp.Child("action"), ""))
		case r.Action == batchv1.PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil:
			errs = append(errs, field.Invalid(rp.Child("action"), r.Action, "requires the backoffLimitPerIndex to be set"))
		case !slices.Contains(actions, r.Action):
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, actions))
		}
		if e := r.OnExitCodes; e != nil {
			ep := rp.Child("onExitCodes")
			if e.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn && e.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn {
				errs = append(errs, field.NotSupported(ep.Child("operator"), e.Operator, []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}))
			}
			if e.ContainerName != nil && !slices.Contains(names, *e.ContainerName) {
				errs = append(errs, field.Invalid(ep.Child("containerName"), *e.ContainerName, "must be one of the container or initContainer names in the pod template"))
			}
			if len(e.Values) == 0 {
				errs = append(errs, field.Invalid(ep.Child("values"), e.Values, "at least one value is required"))
			} else if len(e.Values) > maxPodFailurePolicyOnExitCodesValues {
				errs = append(errs, field.TooMany(ep.Child("values"), len(e.Values), maxPodFailurePolicyOnExitCodesValues))
			}
			seen := map[int32]bool{}
			for j, v := range e.Values {
				if e.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
					errs = append(errs, field.Invalid(ep.Child("values").Index(j), v, "must not be 0 for the In operator"))
				}
				if seen[v] {
					errs = append(errs, field.Duplicate(ep.Child("values").Index(j), v))
				}
				seen[v] = true
			}
			if !slices.IsSorted(e.Values) {
				errs = append(errs, field.Invalid(ep.Child("values"), e.Values, "must be ordered"))
			}
		}
		if len(r.OnPodConditions) > maxPodFailurePolicyOnPodConditionsPatterns {
			errs = append(errs, field.TooMany(rp.Child("onPodConditions"), len(r.OnPodConditions), maxPodFailurePolicyOnPodConditionsPatterns))
		}
		for j, c := range r.OnPodConditions {
			cp := rp.Child("onPodConditions").Index(j)
			for _, msg := range content.IsLabelKey(string(c.Type)) {
				errs = append(errs, field.Invalid(cp.Child("type"), c.Type, msg))
			}
			if c.Status != corev1.ConditionTrue && c.Status != corev1.ConditionFalse && c.Status != corev1.ConditionUnknown {
				errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}))
			}
		}
		if (r.OnExitCodes != nil) == (len(r.OnPodConditions) > 0) {
			errs = append(errs, field.Invalid(rp, r.Action, "specify exactly one of onExitCodes and onPodConditions"))
		}
	}
	return errs
}

// validatePodSpec covers the parts of ValidatePodSpec
// (pkg/apis/core/validation/validation.go) the rendered pods use:
// container and volume names, images, env, mounts, resources.
func validatePodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	vols := map[string]bool{}
	for i, v := range s.Volumes {
		vp := p.Child("volumes").Index(i)
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, msg))
		}
		if vols[v.Name] {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		vols[v.Name] = true
		n := 0
		if cm := v.ConfigMap; cm != nil {
			n++
			for _, msg := range validation.IsDNS1123Subdomain(cm.Name) {
				errs = append(errs, field.Invalid(vp.Child("configMap", "name"), cm.Name, msg))
			}
		}
		if c := v.PersistentVolumeClaim; c != nil {
			n++
			if c.ClaimName == "" {
				errs = append(errs, field.Required(vp.Child("persistentVolumeClaim", "claimName"), ""))
			}
		}
		if v.EmptyDir != nil {
			n++
		}
		if n != 1 {
			errs = append(errs, field.Invalid(vp, v.Name, "must have exactly one volume source"))
		}
	}
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	names := map[string]bool{}
	for i, c := range s.Containers {
		cp := p.Child("containers").Index(i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		for j, e := range c.Env {
			ep := cp.Child("env").Index(j)
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), e.Name, msg))
			}
			if f := e.ValueFrom; f != nil && f.ResourceFieldRef != nil {
				r := f.ResourceFieldRef
				if !slices.Contains([]string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"}, r.Resource) {
					errs = append(errs, field.NotSupported(ep.Child("valueFrom", "resourceFieldRef", "resource"), r.Resource, []string{"limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}))
				}
				// validateContainerResourceDivisor: cpu divisors are 1m or 1.
				if d := r.Divisor; !d.IsZero() && strings.HasSuffix(r.Resource, ".cpu") && d.String() != "1" && d.String() != "1m" {
					errs = append(errs, field.Invalid(ep.Child("valueFrom", "resourceFieldRef", "divisor"), r.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
				}
				if r.ContainerName != "" && r.ContainerName != c.Name && !slices.ContainsFunc(s.Containers, func(o corev1.Container) bool { return o.Name == r.ContainerName }) {
					errs = append(errs, field.Invalid(ep.Child("valueFrom", "resourceFieldRef", "containerName"), r.ContainerName, "no such container"))
				}
			}
		}
		paths := map[string]bool{}
		for j, m := range c.VolumeMounts {
			mp := cp.Child("volumeMounts").Index(j)
			if !vols[m.Name] {
				errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
			}
			if m.MountPath == "" || m.MountPath[0] != '/' {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be an absolute path"))
			}
			if paths[m.MountPath] {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
			}
			paths[m.MountPath] = true
		}
		// ValidateResourceRequirements: a request is at most its limit.
		for name, req := range c.Resources.Requests {
			if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(cp.Child("resources", "requests").Key(string(name)), req.String(), "must be less than or equal to "+string(name)+" limit of "+lim.String()))
			}
		}
		for name, q := range c.Resources.Limits {
			if q.Sign() <= 0 {
				errs = append(errs, field.Invalid(cp.Child("resources", "limits").Key(string(name)), q.String(), "must be greater than 0"))
			}
		}
	}
	return errs
}

// validateConfigMap follows ValidateConfigMap
// (pkg/apis/core/validation/validation.go): keys and the 1 MiB cap.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta)
	total := 0
	for k, v := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, msg))
		}
		total += len(v)
	}
	if total > maxConfigMapBytes {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigMapBytes))
	}
	return errs
}

// validateClaim follows ValidatePersistentVolumeClaimSpec: access modes and
// a storage request.
func validateClaim(c *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMeta(&c.ObjectMeta)
	sp := field.NewPath("spec")
	if len(c.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(sp.Child("accessModes"), "at least 1 access mode is required"))
	}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		errs = append(errs, field.Required(sp.Child("resources", "requests").Key("storage"), "a positive size"))
	}
	return errs
}
