package fakegpu

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// ResourceGPU is the extended resource the NVIDIA device plugin advertises,
// and the one TrainJobs request.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// requiredCapacity lists the resources every profile must state, because a
// real kubelet always reports them and the scheduler filters on them.
var requiredCapacity = []corev1.ResourceName{
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage,
	corev1.ResourcePods,
}

// Profile is the shape of one kind of simulated machine: what its Node
// advertises to the scheduler. Profiles are data, embedded from
// profiles/*.yaml, one file per profile, named after the profile.
type Profile struct {
	// Name identifies the profile, e.g. "nvidia-h100-80gb". It must be a
	// DNS-1123 label because it is the default prefix of node names.
	Name string `json:"name"`
	// Description is a one-line human description of the machine.
	Description string `json:"description"`
	// Labels are put on every Node of this profile.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are put on every Node of this profile.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Capacity is the Node's status.capacity. It must state cpu, memory,
	// ephemeral-storage and pods.
	Capacity corev1.ResourceList `json:"capacity"`
	// Allocatable is the Node's status.allocatable. When a profile file leaves
	// it out, DecodeProfile sets it to a copy of Capacity. Each quantity must
	// not exceed the capacity of the same resource.
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
}

// DeepCopy returns a copy of p that shares no memory with it.
func (p Profile) DeepCopy() Profile {
	out := p
	if p.Labels != nil {
		out.Labels = make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			out.Labels[k] = v
		}
	}
	if p.Taints != nil {
		out.Taints = make([]corev1.Taint, len(p.Taints))
		for i := range p.Taints {
			p.Taints[i].DeepCopyInto(&out.Taints[i])
		}
	}
	out.Capacity = p.Capacity.DeepCopy()
	out.Allocatable = p.Allocatable.DeepCopy()
	return out
}

// GPUs returns the number of nvidia.com/gpu the profile's Nodes allocate,
// zero for a CPU-only profile.
func (p Profile) GPUs() int64 {
	q, ok := p.Allocatable[ResourceGPU]
	if !ok {
		return 0
	}
	return q.Value()
}

// DecodeProfile decodes one profile document strictly: unknown or duplicate
// fields are errors. It defaults Allocatable to Capacity and validates the
// result.
func DecodeProfile(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Profile{}, fmt.Errorf("failed to decode profile: %w", err)
	}
	if p.Allocatable == nil {
		p.Allocatable = p.Capacity.DeepCopy()
	}
	if err := p.validate(); err != nil {
		return Profile{}, fmt.Errorf("failed to validate profile %q: %w", p.Name, err)
	}
	return p, nil
}

func (p Profile) validate() error {
	var errs field.ErrorList
	for _, msg := range content.IsDNS1123Label(p.Name) {
		errs = append(errs, field.Invalid(field.NewPath("name"), p.Name, msg))
	}
	if strings.TrimSpace(p.Description) == "" {
		errs = append(errs, field.Required(field.NewPath("description"), ""))
	}
	errs = append(errs, metav1validation.ValidateLabels(p.Labels, field.NewPath("labels"))...)
	for _, key := range reservedLabels {
		if _, ok := p.Labels[key]; ok {
			errs = append(errs, field.Forbidden(field.NewPath("labels").Key(key), "set by the node group, not by a profile"))
		}
	}
	errs = append(errs, validateTaints(p.Taints, field.NewPath("taints"))...)
	for _, name := range requiredCapacity {
		if _, ok := p.Capacity[name]; !ok {
			errs = append(errs, field.Required(field.NewPath("capacity").Key(string(name)), ""))
		}
	}
	for name, q := range p.Capacity {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(field.NewPath("capacity").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	for name, q := range p.Allocatable {
		fldPath := field.NewPath("allocatable").Key(string(name))
		c, ok := p.Capacity[name]
		switch {
		case !ok:
			errs = append(errs, field.Invalid(fldPath, q.String(), "resource has no capacity"))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(fldPath, q.String(), "must not be negative"))
		case q.Cmp(c) > 0:
			errs = append(errs, field.Invalid(fldPath, q.String(), "must not exceed capacity "+c.String()))
		}
	}
	return errs.ToAggregate()
}

// validateTaints checks what the API server would reject: bad keys, values
// or effects, and two taints with the same key and effect.
func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		for _, msg := range content.IsLabelKey(t.Key) {
			errs = append(errs, field.Invalid(idxPath.Child("key"), t.Key, msg))
		}
		for _, msg := range content.IsLabelValue(t.Value) {
			errs = append(errs, field.Invalid(idxPath.Child("value"), t.Value, msg))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(idxPath.Child("effect"), t.Effect, []corev1.TaintEffect{
				corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute,
			}))
		}
		ke := keyEffect{t.Key, t.Effect}
		if seen[ke] {
			errs = append(errs, field.Duplicate(idxPath, t.Key+":"+string(t.Effect)))
		}
		seen[ke] = true
	}
	return errs
}

//go:embed profiles/*.yaml
var profileFS embed.FS

// profiles loads the embedded profiles once. The data is compiled in, so an
// error here is a bug in a profiles/*.yaml file, which the tests catch.
var profiles = sync.OnceValues(func() ([]Profile, error) {
	return loadProfiles(profileFS, "profiles")
})

func loadProfiles(fsys fs.FS, dir string) ([]Profile, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("failed to list profiles: %w", err)
	}
	out := make([]Profile, 0, len(files))
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("failed to read profile %s: %w", file, err)
		}
		p, err := DecodeProfile(data)
		if err != nil {
			return nil, fmt.Errorf("failed to load profile %s: %w", file, err)
		}
		if want := strings.TrimSuffix(path.Base(file), ".yaml"); p.Name != want {
			return nil, fmt.Errorf("failed to load profile %s: name %q does not match the file name %q", file, p.Name, want)
		}
		out = append(out, p)
	}
	// File names are unique and equal profile names, so names are unique;
	// fs.Glob already returns them sorted, but sort by name explicitly as
	// Profiles promises.
	slices.SortFunc(out, func(a, b Profile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Profiles returns a copy of every built-in profile, sorted by name.
//
// It panics if the embedded profile data is invalid, which is a programming
// error caught by this package's tests.
func Profiles() []Profile {
	ps, err := profiles()
	if err != nil {
		panic(err)
	}
	out := make([]Profile, len(ps))
	for i, p := range ps {
		out[i] = p.DeepCopy()
	}
	return out
}

// ProfileNames returns the names of the built-in profiles, sorted.
func ProfileNames() []string {
	ps, err := profiles()
	if err != nil {
		panic(err)
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// ErrUnknownProfile is wrapped by the errors LookupProfile (and so
// NodeGroup.Nodes and ParseNodeGroups) return for a name that is not a
// built-in profile.
var ErrUnknownProfile = errors.New("unknown profile")

// LookupProfile returns a copy of the built-in profile called name. For an
// unknown name the error wraps ErrUnknownProfile and lists the known names.
func LookupProfile(name string) (Profile, error) {
	ps, err := profiles()
	if err != nil {
		return Profile{}, fmt.Errorf("failed to load profiles: %w", err)
	}
	for _, p := range ps {
		if p.Name == name {
			return p.DeepCopy(), nil
		}
	}
	return Profile{}, fmt.Errorf("%w %q (known profiles: %s)", ErrUnknownProfile, name, strings.Join(ProfileNames(), ", "))
}
