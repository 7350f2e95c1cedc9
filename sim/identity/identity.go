// Package identity says who each component of a cluster is to the API server:
// the user it is on a kubeadm cluster installed from its upstream manifests,
// and the RBAC those manifests give it (fixtures/rbac/ and the releases' and
// components' rbac files, rendered from the module cache by make fixtures).
//
// The envtest provider gives every component a kubeconfig of its own user,
// never an administrator's: a controller that lacks a permission is refused
// here as it is on kind, and the API server's audit log names the component
// of every request (Who). The users are those of client certificates (the
// name and groups a ServiceAccount token would carry, without the account's
// UID), which RBAC authorizes exactly as it does the account itself.
//
// It does not cover the Node authorizer (a real kubelet's own rights: no
// kubelet runs, KWOK plays it as its own ServiceAccount) nor the harness's own
// writes (nodes, namespaces, the kubelet and node steps), which are an
// administrator's.
package identity

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/manifests"
)

// The components, by the names the rest of the harness gives them.
const (
	Trainer           = "trainer"
	JobSet            = "jobset"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
	Kueue             = "kueue"
	Provisioner       = "local-path-provisioner"
)

// Identity is a component's user.
type Identity struct {
	// Component is the component's name (Trainer, JobSet, ...).
	Component string
	// User and Groups are what the API server authenticates its requests
	// as; system:authenticated is added by the server.
	User   string
	Groups []string
}

// serviceAccount is the identity of a component that runs as a
// ServiceAccount.
func serviceAccount(component, namespace, name string) Identity {
	return Identity{
		Component: component,
		User:      "system:serviceaccount:" + namespace + ":" + name,
		Groups:    []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
}

// identities are the components' users: the ServiceAccounts of their
// upstream manifests (the Trainer's manifests/overlays/manager, which
// installs JobSet into kubeflow-system; Kueue's config/default; KWOK's
// kustomize/kwok; rancher's local-path-storage.yaml), and the users kubeadm
// gives kube-scheduler and kube-controller-manager, whose rights are the API
// server's bootstrap policy. kube-controller-manager runs with
// --use-service-account-credentials: each of its controllers acts as a
// ServiceAccount of its own in kube-system (Who names them).
var identities = []Identity{
	serviceAccount(Trainer, "kubeflow-system", "kubeflow-trainer-controller-manager"),
	serviceAccount(JobSet, "kubeflow-system", "jobset-controller-manager"),
	{Component: ControllerManager, User: "system:kube-controller-manager"},
	{Component: Scheduler, User: "system:kube-scheduler"},
	serviceAccount(Kwok, "kube-system", "kwok-controller"),
	serviceAccount(Kueue, "kueue-system", "kueue-controller-manager"),
	serviceAccount(Provisioner, "local-path-storage", "local-path-provisioner-service-account"),
}

// Of returns the identity of a component; false: no such component.
func Of(component string) (Identity, bool) {
	for _, id := range identities {
		if id.Component == component {
			return id, true
		}
	}
	return Identity{}, false
}

// controllerManagerAccounts are the ServiceAccounts kube-controller-manager's
// controllers act as with --use-service-account-credentials (the controllers
// the harness runs; the names are the bootstrap policy's).
var controllerManagerAccounts = map[string]bool{
	"job-controller": true, "ttl-after-finished-controller": true, "generic-garbage-collector": true,
	"namespace-controller": true, "service-account-controller": true, "resourcequota-controller": true,
	"persistent-volume-binder": true, "pvc-protection-controller": true, "pv-protection-controller": true,
	"ephemeral-volume-controller": true, "disruption-controller": true, "node-controller": true,
	"pod-garbage-collector": true, "root-ca-cert-publisher": true,
}

// Who names the component a user is: the component's name, or for one of
// kube-controller-manager's controllers "kube-controller-manager/<account>"
// (job-controller, ...). It returns "" for any other user (an administrator,
// a scenario's actor).
func Who(user string) string {
	for _, id := range identities {
		if id.User == user {
			return id.Component
		}
	}
	if name, ok := strings.CutPrefix(user, "system:serviceaccount:kube-system:"); ok && controllerManagerAccounts[name] {
		return ControllerManager + "/" + name
	}
	return ""
}

// UsersOf returns the users a component's requests come as: its own, for
// kube-controller-manager its controllers' accounts too, and for
// kube-controller-manager/<controller> that controller's account. False:
// no such component.
func UsersOf(component string) ([]string, bool) {
	if name, ok := strings.CutPrefix(component, ControllerManager+"/"); ok {
		return []string{"system:serviceaccount:kube-system:" + name}, name != ""
	}
	id, ok := Of(component)
	if !ok {
		return nil, false
	}
	users := []string{id.User}
	if component == ControllerManager {
		for _, u := range AllUsers() {
			if strings.HasPrefix(u, "system:serviceaccount:kube-system:") && controllerManagerAccounts[strings.TrimPrefix(u, "system:serviceaccount:kube-system:")] {
				users = append(users, u)
			}
		}
	}
	return users, true
}

// AllUsers returns the users of every component and of
// kube-controller-manager's controllers' accounts, in a stable order.
func AllUsers() []string {
	var out []string
	for _, id := range identities {
		out = append(out, id.User)
	}
	accounts := make([]string, 0, len(controllerManagerAccounts))
	for name := range controllerManagerAccounts {
		accounts = append(accounts, "system:serviceaccount:kube-system:"+name)
	}
	slices.Sort(accounts)
	return append(out, accounts...)
}

// rbacOrder is the order Install creates the kinds in: a ServiceAccount's
// namespace first.
var rbacOrder = []string{"Namespace", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}

// ReadRBAC reads the RBAC manifest at path of fsys (a multi-document YAML of
// the kinds of rbacOrder), in the order Install creates them.
func ReadRBAC(fsys fs.FS, path string) ([]*unstructured.Unstructured, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("failed to read RBAC %s: %w", path, err)
	}
	objs, err := manifests.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("failed to decode RBAC %s: %w", path, err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		byKind[obj.GetKind()] = append(byKind[obj.GetKind()], obj)
	}
	var out []*unstructured.Unstructured
	for _, kind := range rbacOrder {
		out = append(out, byKind[kind]...)
		delete(byKind, kind)
	}
	for kind := range byKind {
		return nil, fmt.Errorf("RBAC %s holds a %s, which is not RBAC", path, kind)
	}
	return out, nil
}

// Install creates objs (from ReadRBAC) with c; one that exists is left as it
// is (a namespace or account an earlier manifest made).
func Install(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := c.Create(ctx, obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
