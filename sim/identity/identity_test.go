package identity

import (
	"io/fs"
	"path"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/fixtures"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// boundUsers returns, for each ClusterRole or Role an RBAC manifest binds,
// the ServiceAccount users bound to it, as "Kind/name".
func boundUsers(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, obj := range objs {
		if obj.GetKind() != "ClusterRoleBinding" && obj.GetKind() != "RoleBinding" {
			continue
		}
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			if m["kind"] == "ServiceAccount" {
				user := "system:serviceaccount:" + m["namespace"].(string) + ":" + m["name"].(string)
				out[user] = append(out[user], kind+"/"+name)
			}
		}
	}
	return out
}

// TestRBACBindsEveryIdentity: each component that runs as a ServiceAccount
// finds, in the manifest it comes from, the account and a ClusterRole bound
// to it; in every Trainer release's manifests too.
func TestRBACBindsEveryIdentity(t *testing.T) {
	releases, err := fs.ReadDir(fixtures.FS, fixtures.ReleasesDir)
	if err != nil {
		t.Fatal(err)
	}
	manifests := map[string][]string{
		fixtures.TrainerRBAC:     {Trainer, JobSet},
		fixtures.KwokRBAC:        {Kwok},
		fixtures.ProvisionerRBAC: {Provisioner},
		path.Join(fixtures.ComponentsDir, "kueue", "v0.19.1", "rbac.yaml"): {Kueue},
	}
	for _, r := range releases {
		manifests[path.Join(fixtures.ReleasesDir, r.Name(), fixtures.TrainerRBAC)] = []string{Trainer, JobSet}
	}
	for file, components := range manifests {
		objs, err := ReadRBAC(fixtures.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		bound := boundUsers(t, objs)
		accounts := map[string]bool{}
		for _, obj := range objs {
			if obj.GetKind() == "ServiceAccount" {
				accounts["system:serviceaccount:"+obj.GetNamespace()+":"+obj.GetName()] = true
			}
		}
		for _, c := range components {
			id, _ := Of(c)
			if !accounts[id.User] {
				t.Errorf("%s: no ServiceAccount for %s (%s)", file, c, id.User)
			}
			clusterRoles := 0
			for _, role := range bound[id.User] {
				if len(role) > len("ClusterRole/") && role[:len("ClusterRole/")] == "ClusterRole/" {
					clusterRoles++
				}
			}
			if clusterRoles == 0 {
				t.Errorf("%s: no ClusterRole bound to %s (%s); bound: %v", file, c, id.User, bound[id.User])
			}
		}
	}
}

// TestReadRBACOrder: namespaces and accounts come before the roles, and the
// roles before their bindings; a manifest with anything else is refused.
func TestReadRBACOrder(t *testing.T) {
	objs, err := ReadRBAC(fixtures.FS, fixtures.ProvisionerRBAC)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, obj := range objs {
		kinds = append(kinds, obj.GetKind())
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds mismatch (-want +got):\n%s", diff)
	}
	if _, err := ReadRBAC(fixtures.FS, fixtures.TrainerInstall); err == nil {
		t.Error("the whole install manifest (CRDs, Deployments) was read as RBAC")
	}
}

// TestWho: the API server's user names the component, and
// kube-controller-manager's controllers by their accounts; anybody else is
// nobody's.
func TestWho(t *testing.T) {
	for user, want := range map[string]string{
		"system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager": Trainer,
		"system:serviceaccount:kubeflow-system:jobset-controller-manager":           JobSet,
		"system:serviceaccount:kueue-system:kueue-controller-manager":               Kueue,
		"system:serviceaccount:kube-system:kwok-controller":                         Kwok,
		"system:kube-scheduler":                            Scheduler,
		"system:kube-controller-manager":                   ControllerManager,
		"system:serviceaccount:kube-system:job-controller": "kube-controller-manager/job-controller",
		"system:serviceaccount:kube-system:default":        "",
		"admin": "",
	} {
		if got := Who(user); got != want {
			t.Errorf("Who(%q) = %q, want %q", user, got, want)
		}
	}
}

// TestEveryGateableComponentHasAUser: the components a gate may name
// (v1alpha1.ClusterComponents and v1alpha1.Components) each have a user,
// and kube-controller-manager's controllers theirs.
func TestEveryGateableComponentHasAUser(t *testing.T) {
	for _, c := range append(slices.Clone(v1alpha1.ClusterComponents), v1alpha1.Components...) {
		if users, ok := UsersOf(c); !ok || len(users) == 0 {
			t.Errorf("component %s has no user", c)
		}
	}
	users, _ := UsersOf(ControllerManager)
	if !slices.Contains(users, "system:serviceaccount:kube-system:job-controller") || !slices.Contains(users, "system:kube-controller-manager") {
		t.Errorf("kube-controller-manager's users %v lack its own or the Job controller's", users)
	}
	if users, ok := UsersOf(ControllerManager + "/job-controller"); !ok || !slices.Equal(users, []string{"system:serviceaccount:kube-system:job-controller"}) {
		t.Errorf("the Job controller's users: %v", users)
	}
}
