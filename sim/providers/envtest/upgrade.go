package envtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
)

// A live upgrade (cluster.TrainerUpgrade): the Trainer release that runs
// is replaced by another under running work, as helm upgrade (or kubectl
// apply --prune) of the release's manifests does it on a cluster: every
// manifest applied while the old managers still run (the new Deployment's
// Pod takes seconds to start and waits for the leader lease the old one
// holds), then the old managers stopped and the new ones started. In
// order: the CRDs (and a probe that the API server serves the new TrainJob
// schema), the RBAC, the default runtimes (validated by the old release's
// webhook, whose configurations are still in place), the webhook
// configurations, the managers. So the new Trainer's first reconcile of a
// TrainJob always reads the new runtimes: v2.3.0 snapshots the runtime at
// its first reconcile of a TrainJob without a snapshot (a ConfigMap
// <trainjob>-runtime-snapshot), so the other order, runtimes applied after
// the new managers run, would decide by timing which runtime a running
// TrainJob keeps.

var _ cluster.TrainerUpgrade = (*Environment)(nil)

// TrainerRelease is the release that runs now.
func (e *Environment) TrainerRelease() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.release.Version
}

// schemaServedTimeout bounds the wait until the API server serves a CRD's
// new schema.
const schemaServedTimeout = 30 * time.Second

// CanUpgrade says why UpgradeTrainer to a release could not start.
func (e *Environment) CanUpgrade(to string) error { return TrainerBuilt(to) }

// TrainerBuilt says whether an envtest cluster can run a Trainer release:
// nil for one it runs in simctl's process, or one whose managers (and the
// JobSet manager it pins) are built in bin/ of the working directory or a
// parent; otherwise why not, naming make assets.
func TrainerBuilt(version string) error {
	r, err := releases.LookupTrainer(version)
	if err != nil {
		return err
	}
	if !r.InProcess() {
		_, err = releaseBinaries(r)
	}
	return err
}

// UpgradeTrainer replaces the Trainer release that runs by to.
func (e *Environment) UpgradeTrainer(ctx context.Context, to string) ([]cluster.UpgradePart, error) {
	r, err := releases.LookupTrainer(to)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	from := e.release
	e.mu.Unlock()
	if r.Version == from.Version {
		return nil, fmt.Errorf("Trainer %s runs already", r.Version)
	}
	var bins map[string]string
	if !r.InProcess() {
		if bins, err = releaseBinaries(r); err != nil {
			return nil, err
		}
	}
	var parts []cluster.UpgradePart
	part := func(name, detail string, do func() error) error {
		p := cluster.UpgradePart{Name: name, Detail: detail, Start: e.now()}
		err := do()
		p.End = e.now()
		if err != nil {
			p.Name += ": failed"
			p.Detail = err.Error()
		}
		parts = append(parts, p)
		return err
	}
	newCRDs, err := manifests.ReadCRDs(r.Fixtures(), fixtures.CRDDir)
	if err != nil {
		return nil, err
	}
	oldCRDs, err := manifests.ReadCRDs(from.Fixtures(), fixtures.CRDDir)
	if err != nil {
		return nil, err
	}
	steps := []struct {
		name, detail string
		do           func() error
	}{
		{"CRDs of " + r.Version + " applied", crdNames(newCRDs), func() error {
			if err := e.replaceCRDs(ctx, newCRDs); err != nil {
				return err
			}
			return waitForCRDs(e.cfg, newCRDs)
		}},
		{"the API server serves the new TrainJob schema", schemaProbeDetail(oldCRDs, newCRDs), func() error {
			return e.waitSchemaServed(ctx, oldCRDs, newCRDs)
		}},
		{"RBAC of " + r.Version + " applied", fixtures.TrainerRBAC, func() error {
			return replaceRBAC(ctx, e.client, r)
		}},
		{"default runtimes of " + r.Version + " applied", "through " + from.Version + "'s webhook, before the new managers start", func() error {
			return e.replaceRuntimes(ctx, r)
		}},
		{"webhook configurations of " + r.Version + " applied", "those of " + from.Version + " it has not deleted, as helm upgrade or kubectl apply --prune does", func() error {
			return e.replaceWebhookConfigs(from, r)
		}},
		{"Trainer " + from.Version + " and JobSet " + from.JobSet + " stopped", "", e.stopTrainerManagers},
		{"Trainer " + r.Version + " and JobSet " + r.JobSet + " started", "caches synced, webhooks answer", func() error {
			e.mu.Lock()
			e.release = r
			e.mu.Unlock()
			return e.startUpgradedManagers(ctx, bins)
		}},
	}
	for _, st := range steps {
		if err := part(st.name, st.detail, st.do); err != nil {
			return parts, err
		}
	}
	return parts, nil
}

// replaceCRDs creates each CRD or replaces its spec by the release's with
// a JSON patch (kubectl replace of the spec): no resourceVersion, so the
// API server's own status writes to a CRD do not conflict with it, and no
// field of the old schema stays, as a server-side apply by another manager
// would keep it. A refusal is the step's failure, never retried.
func (e *Environment) replaceCRDs(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		err := e.client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			err = e.client.Create(ctx, crd.DeepCopy())
		} else if err == nil {
			var patch []byte
			patch, err = json.Marshal([]map[string]any{{"op": "replace", "path": "/spec", "value": crd.Spec}})
			if err == nil {
				err = e.client.Patch(ctx, crd.DeepCopy(), client.RawPatch(types.JSONPatchType, patch))
			}
		}
		if err != nil {
			return fmt.Errorf("failed to replace CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

func crdNames(crds []*apiextensionsv1.CustomResourceDefinition) string {
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// trainJobCRD is the TrainJob CRD's name.
const trainJobCRD = "trainjobs.trainer.kubeflow.org"

// schemaChange is a field of the TrainJob's spec that one release's schema
// has and the other's not: a probe of which schema the API server serves.
type schemaChange struct {
	field string
	// added: the new schema has it; else the old one.
	added bool
	// typ is its type in the schema that has it.
	typ string
}

// specFields returns the properties of the TrainJob spec of a release's
// CRDs (its first served version), by name, with their types.
func specFields(crds []*apiextensionsv1.CustomResourceDefinition) map[string]string {
	out := map[string]string{}
	for _, c := range crds {
		if c.Name != trainJobCRD {
			continue
		}
		for _, v := range c.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			for name, p := range v.Schema.OpenAPIV3Schema.Properties["spec"].Properties {
				out[name] = p.Type
			}
			return out
		}
	}
	return out
}

// schemaChanges returns the spec fields that one of the two releases'
// TrainJob schemas has and the other not: those the new one removed, then
// those it added, each by name.
func schemaChanges(oldCRDs, newCRDs []*apiextensionsv1.CustomResourceDefinition) []schemaChange {
	before, after := specFields(oldCRDs), specFields(newCRDs)
	var changes []schemaChange
	for name, typ := range after {
		if _, ok := before[name]; !ok {
			changes = append(changes, schemaChange{field: name, added: true, typ: typ})
		}
	}
	for name, typ := range before {
		if _, ok := after[name]; !ok {
			changes = append(changes, schemaChange{field: name, typ: typ})
		}
	}
	slices.SortFunc(changes, func(a, b schemaChange) int {
		if a.added != b.added {
			if b.added {
				return -1
			}
			return 1
		}
		return strings.Compare(a.field, b.field)
	})
	return changes
}

// changedField returns the schema change an upgrade probes: the first of
// schemaChanges, a removed field when there is one.
func changedField(oldCRDs, newCRDs []*apiextensionsv1.CustomResourceDefinition) (schemaChange, bool) {
	changes := schemaChanges(oldCRDs, newCRDs)
	if len(changes) == 0 {
		return schemaChange{}, false
	}
	return changes[0], true
}

func schemaProbeDetail(oldCRDs, newCRDs []*apiextensionsv1.CustomResourceDefinition) string {
	changes := schemaChanges(oldCRDs, newCRDs)
	if len(changes) == 0 {
		return "the two releases' TrainJob specs have the same fields: nothing to probe"
	}
	var removed, added []string
	for _, c := range changes {
		if c.added {
			added = append(added, "spec."+c.field)
		} else {
			removed = append(removed, "spec."+c.field)
		}
	}
	var out []string
	if len(removed) > 0 {
		out = append(out, "removed: "+strings.Join(removed, ", "))
	}
	if len(added) > 0 {
		out = append(out, "added: "+strings.Join(added, ", "))
	}
	c := changes[0]
	if c.added {
		out = append(out, "probe: a dry-run create with spec."+c.field+" is no longer refused as an unknown field")
	} else {
		out = append(out, "probe: a dry-run create with spec."+c.field+" is refused as an unknown field")
	}
	return strings.Join(out, "; ")
}

// waitSchemaServed waits until a strict server-side dry run of a TrainJob
// with a field one schema has and the other not answers as the new schema
// says: the API server's CRD handler serves it (it rebuilds its storage
// from its own watch of the CRD, a moment after the update).
func (e *Environment) waitSchemaServed(ctx context.Context, oldCRDs, newCRDs []*apiextensionsv1.CustomResourceDefinition) error {
	c, ok := changedField(oldCRDs, newCRDs)
	if !ok {
		return nil
	}
	obj := probe.TrainJob(metav1.NamespaceDefault, "trainersim-schema-probe", "ClusterTrainingRuntime", "trainersim-schema-probe")
	var value any = map[string]any{}
	switch c.typ {
	case "array":
		value = []any{}
	case "string":
		value = ""
	}
	if err := unstructured.SetNestedField(obj.Object, value, "spec", c.field); err != nil {
		return err
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, schemaServedTimeout, true, func(ctx context.Context) (bool, error) {
		last = e.client.Create(ctx, obj.DeepCopy(), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
		unknown := last != nil && strings.Contains(last.Error(), `unknown field "spec.`+c.field+`"`)
		return unknown != c.added, nil
	})
	if err != nil {
		return fmt.Errorf("the API server did not serve the new TrainJob schema within %s (spec.%s): %v", schemaServedTimeout, c.field, last)
	}
	return nil
}

// replaceRBAC replaces the Trainer's and JobSet's RBAC by the release's.
func replaceRBAC(ctx context.Context, c client.Client, r releases.Trainer) error {
	objs, err := identity.ReadRBAC(r.Fixtures(), fixtures.TrainerRBAC)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// upgradeFieldManager is the field manager of an upgrade's writes, as
// kubectl apply --server-side names it.
const upgradeFieldManager = "kubectl"

// apply applies obj server-side, taking the fields it sets from any other
// manager (kubectl apply --server-side --force-conflicts): no
// resourceVersion, so a controller's write to the object (the Trainer's
// finalizer on a runtime) does not conflict with it, and what other
// managers set that obj does not (that finalizer) stays. It returns the
// object as written.
func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(upgradeFieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("failed to apply %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	return obj, nil
}

// replaceWebhookConfigs replaces the Trainer's and JobSet's webhook
// configurations of release from by those of r, pointed at the same
// servers, and deletes those r does not have: a configuration left behind
// sends requests to a path the new managers do not serve (a rollback from
// v2.3.0 to v2.1.0 that kept v2.3.0's TrainJob defaulter refused every
// TrainJob create: "the server could not find the requested resource").
func (e *Environment) replaceWebhookConfigs(from, r releases.Trainer) error {
	cur := &e.env.WebhookInstallOptions
	opts := envtest.WebhookInstallOptions{
		LocalServingHost:    cur.LocalServingHost,
		LocalServingPort:    cur.LocalServingPort,
		LocalServingCertDir: cur.LocalServingCertDir,
		LocalServingCAData:  cur.LocalServingCAData,
	}
	if err := readWebhookConfigs(&opts, r); err != nil {
		return err
	}
	var old envtest.WebhookInstallOptions
	if err := readWebhookConfigs(&old, from); err != nil {
		return err
	}
	for _, m := range old.MutatingWebhooks {
		if !slices.ContainsFunc(opts.MutatingWebhooks, func(n *admissionv1.MutatingWebhookConfiguration) bool { return n.Name == m.Name }) {
			if err := e.client.Delete(context.Background(), m); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to delete MutatingWebhookConfiguration %s: %w", m.Name, err)
			}
		}
	}
	for _, v := range old.ValidatingWebhooks {
		if !slices.ContainsFunc(opts.ValidatingWebhooks, func(n *admissionv1.ValidatingWebhookConfiguration) bool { return n.Name == v.Name }) {
			if err := e.client.Delete(context.Background(), v); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to delete ValidatingWebhookConfiguration %s: %w", v.Name, err)
			}
		}
	}
	if err := opts.ModifyWebhookDefinitions(); err != nil {
		return err
	}
	if err := pointJobSetWebhooks(&opts, e.jobSetWebhookPort); err != nil {
		return err
	}
	for _, m := range opts.MutatingWebhooks {
		if err := applyTyped(e.client, m); err != nil {
			return err
		}
	}
	for _, v := range opts.ValidatingWebhooks {
		if err := applyTyped(e.client, v); err != nil {
			return err
		}
	}
	return nil
}

// readWebhookConfigs adds the Trainer's and JobSet's webhook
// configurations of release r to opts, named as installWebhookConfigs
// names them.
func readWebhookConfigs(opts *envtest.WebhookInstallOptions, r releases.Trainer) error {
	for file, prefix := range map[string]string{fixtures.TrainerWebhooks: "", fixtures.JobSetWebhooks: "jobset-"} {
		muts, vals, err := manifests.ReadWebhooks(r.Fixtures(), file, prefix)
		if err != nil {
			return err
		}
		opts.MutatingWebhooks = append(opts.MutatingWebhooks, muts...)
		opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, vals...)
	}
	return nil
}

// applyTyped is apply of a typed object.
func applyTyped(c client.Client, obj client.Object) error {
	u, err := toUnstructured(c, obj)
	if err != nil {
		return err
	}
	_, err = apply(context.Background(), c, u)
	return err
}

func toUnstructured(c client.Client, obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := c.Scheme().Convert(obj, u, nil); err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// stopTrainerManagers stops the Trainer's and JobSet's managers that run,
// gracefully: in this process, or the release's two processes.
func (e *Environment) stopTrainerManagers() error {
	var errs []error
	for _, m := range e.inProcessManagers() {
		if m.up() {
			m.cancelRun()
			errs = append(errs, m.wait(stopTimeout))
		}
	}
	e.setInProcessManagers(nil)
	e.mu.Lock()
	procs := e.releaseProcesses
	e.releaseProcesses = nil
	e.mu.Unlock()
	for _, p := range procs {
		errs = append(errs, p.Stop(stopTimeout))
	}
	return errors.Join(errs...)
}

// startUpgradedManagers starts e.release's managers, in this process or
// as processes (bins), and waits until their webhooks answer.
func (e *Environment) startUpgradedManagers(ctx context.Context, bins map[string]string) error {
	if e.release.InProcess() {
		return e.startInProcessManagers(ctx)
	}
	e.mu.Lock()
	e.upgrades++
	suffix := fmt.Sprintf("-%d", e.upgrades)
	e.mu.Unlock()
	return e.startReleaseManagers(ctx, bins, suffix)
}

// replaceRuntimes replaces the default ClusterTrainingRuntimes by release
// r's, through the webhook of the release that runs.
func (e *Environment) replaceRuntimes(ctx context.Context, r releases.Trainer) error {
	objs, err := manifests.ReadObjects(r.Fixtures(), fixtures.RuntimeDir)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := apply(ctx, e.client, o); err != nil {
			return err
		}
	}
	return nil
}
