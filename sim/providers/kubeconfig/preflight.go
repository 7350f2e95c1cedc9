package kubeconfig

// The kubeconfig provider's preflight: before anything is created, check
// that the cluster runs what the scenarios need, and find the versions that
// run.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// installHint says how to install what a preflight found missing.
const installHint = "install Kubeflow Trainer and JobSet (kubectl apply --server-side -k \"github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=" + releases.TrainerVersion + "\", then manifests/overlays/runtimes), or use a cluster of simctl up"

// PreflightError lists everything a cluster lacks, each with what to do.
type PreflightError struct {
	// Server is the API server's address.
	Server string
	// Problems are the findings, one line each.
	Problems []string
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("the cluster at %s cannot run scenarios:\n  - %s", e.Server, strings.Join(e.Problems, "\n  - "))
}

// requiredCRDs are the CRDs scenarios write to.
var requiredCRDs = []string{
	"trainjobs.trainer.kubeflow.org",
	"trainingruntimes.trainer.kubeflow.org",
	"clustertrainingruntimes.trainer.kubeflow.org",
	"jobsets.jobset.x-k8s.io",
}

// requiredPermissions are what simctl does as the kubeconfig's user.
var requiredPermissions = []authorizationv1.ResourceAttributes{
	{Verb: "create", Resource: "namespaces"},
	{Verb: "create", Resource: "nodes"},
	{Verb: "delete", Resource: "nodes"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
	{Verb: "impersonate", Resource: "users"},
	{Verb: "impersonate", Resource: "groups"},
}

// preflight checks, before anything else is read, that the kubeconfig's
// user may do what simctl does and that the cluster runs what scenarios
// need; it returns a *PreflightError naming everything missing.
func preflight(ctx context.Context, c client.Client, server string, release releases.Trainer) error {
	var problems []string
	for _, attrs := range requiredPermissions {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		if err := c.Create(ctx, review); err != nil {
			return fmt.Errorf("failed to review the kubeconfig's permissions: %w", err)
		}
		if !review.Status.Allowed {
			problems = append(problems, fmt.Sprintf("the kubeconfig's user may not %s %s: simctl needs a cluster-admin kubeconfig", attrs.Verb, strings.TrimPrefix(attrs.Group+"/"+attrs.Resource, "/")))
		}
	}
	if len(problems) > 0 {
		// Without these rights the rest cannot even be looked at.
		return &PreflightError{Server: server, Problems: problems}
	}
	for _, name := range requiredCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("CRD %s is not installed: %s", name, installHint))
		case err != nil:
			return fmt.Errorf("failed to get CRD %s: %w", name, err)
		case !crdEstablished(crd):
			problems = append(problems, fmt.Sprintf("CRD %s is not Established", name))
		}
	}
	if len(problems) == 0 {
		problems = append(problems, checkWebhooks(ctx, c)...)
		missing, err := missingRuntimes(ctx, c, release)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("default ClusterTrainingRuntimes missing: %s: kubectl apply --server-side -k \"github.com/kubeflow/trainer.git/manifests/overlays/runtimes?ref=%s\" (the runtimes of the Trainer %s; --trainer names another release)", strings.Join(missing, ", "), release.Version, release.Version))
		}
	}
	if len(problems) > 0 {
		return &PreflightError{Server: server, Problems: problems}
	}
	return nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// checkWebhooks finds the Trainer's and JobSet's webhooks among the
// cluster's webhook configurations, by the resources their rules name.
func checkWebhooks(ctx context.Context, c client.Client) []string {
	var muts admissionv1.MutatingWebhookConfigurationList
	var vals admissionv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &muts); err != nil {
		return []string{fmt.Sprintf("cannot list MutatingWebhookConfigurations: %v", err)}
	}
	if err := c.List(ctx, &vals); err != nil {
		return []string{fmt.Sprintf("cannot list ValidatingWebhookConfigurations: %v", err)}
	}
	served := map[string]bool{}
	add := func(kind string, rules []admissionv1.RuleWithOperations) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					served[kind+" "+g+"/"+res] = true
				}
			}
		}
	}
	for _, cfg := range muts.Items {
		for _, w := range cfg.Webhooks {
			add("mutating", w.Rules)
		}
	}
	for _, cfg := range vals.Items {
		for _, w := range cfg.Webhooks {
			add("validating", w.Rules)
		}
	}
	var problems []string
	for _, want := range []string{"validating trainer.kubeflow.org/trainjobs", "mutating jobset.x-k8s.io/jobsets", "validating jobset.x-k8s.io/jobsets"} {
		if !served[want] {
			problems = append(problems, fmt.Sprintf("no %s webhook is configured: the Trainer or JobSet controller is not installed with its webhooks: %s", want, installHint))
		}
	}
	return problems
}

// missingRuntimes returns the default runtimes of the release that the
// cluster lacks.
func missingRuntimes(ctx context.Context, c client.Client, release releases.Trainer) ([]string, error) {
	want, err := manifests.ReadObjects(release.Fixtures(), fixtures.RuntimeDir)
	if err != nil {
		return nil, err
	}
	var list trainer.ClusterTrainingRuntimeList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("failed to list ClusterTrainingRuntimes: %w", err)
	}
	var missing []string
	for _, o := range want {
		if !slices.ContainsFunc(list.Items, func(r trainer.ClusterTrainingRuntime) bool { return r.Name == o.GetName() }) {
			missing = append(missing, o.GetName())
		}
	}
	return missing, nil
}

// controllerVersions finds the Trainer and JobSet versions that run: the tag
// of their controller Deployments' images, or what the kwok lease of a
// simctl-started cluster says.
func controllerVersions(ctx context.Context, c client.Client, kwokLease *coordinationv1.Lease) (trainerVersion, jobSetVersion string) {
	trainerVersion, jobSetVersion = "unknown", "unknown"
	var deployments appsv1.DeploymentList
	if err := c.List(ctx, &deployments); err == nil {
		for _, d := range deployments.Items {
			for _, ctr := range d.Spec.Template.Spec.Containers {
				repo, tag, ok := strings.Cut(ctr.Image[strings.LastIndexByte(ctr.Image, '/')+1:], ":")
				if !ok {
					continue
				}
				switch repo {
				case "trainer-controller-manager":
					trainerVersion = tag
				case "jobset":
					jobSetVersion = tag
				}
			}
		}
	}
	if trainerVersion != "unknown" && jobSetVersion != "unknown" {
		return trainerVersion, jobSetVersion
	}
	if l := kwokLease; l != nil {
		if v := l.Annotations[kwok.AnnotationTrainer]; v != "" && trainerVersion == "unknown" {
			trainerVersion = v
		}
		if v := l.Annotations[kwok.AnnotationJobSet]; v != "" && jobSetVersion == "unknown" {
			jobSetVersion = v
		}
	}
	return trainerVersion, jobSetVersion
}
