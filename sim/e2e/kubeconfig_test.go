package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// readmeExample is the scenario the README shows, and the warm re-run's
// measure.
const readmeExample = "../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml"

// runLabelled lists what carries cluster.RunLabel: what a run against an
// existing cluster created and has not deleted yet (a namespace being
// deleted counts as deleted).
func runLabelled(ctx context.Context, c client.Client) []string {
	sel := client.HasLabels{cluster.RunLabel}
	var left []string
	var nss corev1.NamespaceList
	Expect(c.List(ctx, &nss, sel)).To(Succeed())
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp == nil {
			left = append(left, "namespace "+ns.Name)
		}
	}
	var nodes corev1.NodeList
	Expect(c.List(ctx, &nodes, sel)).To(Succeed())
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			left = append(left, "node "+n.Name)
		}
	}
	var policies admissionv1.MutatingAdmissionPolicyList
	if err := c.List(ctx, &policies, sel); !meta.IsNoMatchError(err) {
		Expect(err).NotTo(HaveOccurred())
		for _, p := range policies.Items {
			left = append(left, "policy "+p.Name)
		}
	}
	return left
}

var _ = Describe("simctl run --kubeconfig on a running trainersim cluster", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	It("re-runs the README example with no cluster start, reusing the cluster's kwok, and leaves nothing of the run behind", func(ctx SpecContext) {
		reportDir := GinkgoT().TempDir()
		cmd := exec.Command(simctl, "run", "--kubeconfig", env.KubeconfigPath, "--report-dir", reportDir, readmeExample)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		out := string(session.Out.Contents())
		Expect(out).To(ContainSubstring("using the cluster of " + env.KubeconfigPath))
		Expect(out).To(ContainSubstring("kwok (the cluster's, reused)"))
		Expect(out).To(ContainSubstring("isolation-policy (the cluster's, reused)"))
		Expect(out).NotTo(ContainSubstring("kube-apiserver+etcd"), "a run on an existing cluster starts no control plane")
		Expect(out).To(ContainSubstring("PASS  sdk-and-kueue-share-a-gpu-job"))

		run := readReport(reportDir)
		Expect(run.Cluster).To(Equal("kubeconfig"))
		Expect(run.KubernetesVersion).To(Equal("v" + releases.KubernetesVersion))
		Expect(run.TrainerVersion).To(Equal(env.Versions().Trainer), "the versions come from the cluster's kwok lease")
		Expect(run.JobSetVersion).To(Equal(env.Versions().JobSet))
		Expect(run.TrainerVersion).To(Equal(releases.TrainerVersion), "the test binary's in-process Trainer is go.mod's")
		Expect(run.Scenarios).To(HaveLen(1))
		Expect(run.Scenarios[0].Passed).To(BeTrue())

		Expect(runLabelled(ctx, k8s)).To(BeEmpty())
		// Torn down in the order a cluster needs (Pods gone, then the
		// nodes): once the run has exited no Pod nor node of it is left,
		// not even Terminating, where nodes deleted first leave their
		// Pods to the Pod garbage collector for about a minute. The
		// namespace, being deleted, ends its deletion on its own.
		ns := run.Scenarios[0].Namespace
		namespace := &corev1.Namespace{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, namespace); !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
			Expect(namespace.DeletionTimestamp).NotTo(BeNil(), "namespace %s is not being deleted", ns)
		}
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
		var nodes corev1.NodeList
		Expect(k8s.List(ctx, &nodes, client.MatchingLabels{cluster.IsolationKey: ns})).To(Succeed())
		Expect(nodes.Items).To(BeEmpty(), "the scenario's nodes, Terminating or not")
		lease := &coordinationv1.Lease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "trainersim-kwok"}, lease)).To(Succeed(), "the cluster's own kwok lease stays")
	})

	It("isolates the scenario's Pods with the cluster's admission policy alone: the namespace has no PodNodeSelector annotation", func(ctx SpecContext) {
		cmd := exec.Command(simctl, "run", "--kubeconfig", env.KubeconfigPath, "--keep", readmeExample)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			session.Interrupt().Wait(runTimeout)
			_, err := kubeconfig.Clean(ctx, k8s, clock.RealClock{})
			Expect(err).NotTo(HaveOccurred())
		})
		Eventually(session).WithTimeout(runTimeout).Should(gbytes.Say(`cluster kept`))
		m := regexp.MustCompile(`namespace (\S+)`).FindStringSubmatch(string(session.Out.Contents()))
		Expect(m).NotTo(BeNil())
		ns := m[1]
		namespace := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
		Expect(namespace.Annotations).NotTo(HaveKey("scheduler.alpha.kubernetes.io/node-selector"))
		Expect(namespace.Labels).To(HaveKeyWithValue(cluster.IsolationKey, ns))
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(cluster.IsolationKey, ns))
			Expect(p.Spec.Tolerations).To(ContainElement(corev1.Toleration{Key: cluster.IsolationKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}))
			node := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
			Expect(node.Labels).To(HaveKeyWithValue(cluster.IsolationKey, ns), "Pod %s runs on a node of its own scenario", p.Name)
		}
	})

	It("installs a policy of its own where the cluster keeps none, waits until it applies, and deletes it at the end", func(ctx SpecContext) {
		policy := &admissionv1.MutatingAdmissionPolicy{}
		binding := &admissionv1.MutatingAdmissionPolicyBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "trainersim-isolation"}, policy)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "trainersim-isolation"}, binding)).To(Succeed())
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		Expect(k8s.Delete(ctx, policy)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, o := range []client.Object{policy, binding} {
				o.SetResourceVersion("")
				o.SetUID("")
				Expect(k8s.Create(ctx, o)).To(Succeed())
			}
		})
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", env.KubeconfigPath, readmeExample), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		out := string(session.Out.Contents())
		Expect(out).To(MatchRegexp(`isolation-policy +ready in`))
		Expect(out).NotTo(ContainSubstring("isolation-policy (the cluster's, reused)"))
		Expect(out).To(ContainSubstring("PASS  sdk-and-kueue-share-a-gpu-job"))
		Expect(runLabelled(ctx, k8s)).To(BeEmpty(), "the run's policy is deleted at the end")
	})

	It("serves a scenario's webhook and gate at loopback, which the cluster's API server reaches, found at preflight", func(ctx SpecContext) {
		session := startSimctl(simctl, "run", "--kubeconfig", env.KubeconfigPath, "../kinde2e/testdata/served-webhook-and-gate.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		out := string(session.Out.Contents())
		Expect(out).To(MatchRegexp(`webhook-serving \(127\.0\.0\.1\) +ready in`))
		Expect(out).To(ContainSubstring("PASS  served-webhook-and-gate"))
		Expect(runLabelled(ctx, k8s)).To(BeEmpty(), "the probe's configuration and the run's are deleted")
	})

	It("refuses an unreachable cluster in one line, exit 3", func() {
		kubeconfig := writeKubeconfig(GinkgoT().TempDir(), &rest.Config{Host: "https://127.0.0.1:1"})
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", kubeconfig, readmeExample), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(3))
		Expect(session.Err).To(gbytes.Say(`cannot reach the cluster at https://127.0.0.1:1`))
	})

	It("refuses a --trainer the cluster does not run, exit 3, and runs nothing", func(ctx SpecContext) {
		session := startSimctl(simctl, "run", "--kubeconfig", env.KubeconfigPath, "--trainer", "v2.2.0", readmeExample)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(3))
		Expect(string(session.Err.Contents())).To(ContainSubstring("the cluster runs the Trainer " + releases.TrainerVersion + ", not the v2.2.0 of --trainer"))
		Expect(string(session.Out.Contents())).NotTo(ContainSubstring("PASS"))
		Expect(runLabelled(ctx, k8s)).To(BeEmpty())
	})

	It("simctl clean removes what a killed run left behind", func(ctx SpecContext) {
		cmd := exec.Command(simctl, "run", "--kubeconfig", env.KubeconfigPath, readmeExample)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		// Killed while its scenario runs: its policy, namespace and nodes
		// are there.
		Eventually(func() []string { return runLabelled(ctx, k8s) }).WithTimeout(runTimeout).WithPolling(20 * time.Millisecond).Should(ContainElement(HavePrefix("node ")))
		session.Kill()
		Eventually(session).WithTimeout(processExitTimeout).Should(gexec.Exit())
		Expect(runLabelled(ctx, k8s)).NotTo(BeEmpty())

		var before corev1.NodeList
		Expect(k8s.List(ctx, &before, client.MatchingLabels{cluster.ManagedByLabel: cluster.ManagedByValue})).To(Succeed())
		clean, err := gexec.Start(exec.Command(simctl, "clean", "--kubeconfig", env.KubeconfigPath), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(clean).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(clean.Out).To(gbytes.Say(`deleted `))
		Expect(runLabelled(ctx, k8s)).To(BeEmpty())
		// What the cluster itself made (its nodes, carrying no run label)
		// stays.
		own := 0
		for _, n := range before.Items {
			if _, ofRun := n.Labels[cluster.RunLabel]; !ofRun {
				own++
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&n), &corev1.Node{})).To(Succeed(), "clean deleted the cluster's own node %s", n.Name)
			}
		}
		Expect(own).To(BeNumerically(">", 0), "the suite's cluster has nodes of its own to keep")
	})
})

var _ = Describe("simctl run --kubeconfig on a cluster without the Trainer", Ordered, func() {
	var (
		simctl string
		bare   *envtest.Environment
		dir    string
		c      client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		simctl = buildSimctl()
		bare = &envtest.Environment{BinaryAssetsDirectory: assetsDir()}
		// A cluster that offers no isolation policy, as before Kubernetes
		// 1.36.
		// 1.36: neither the API nor the admission plugin that waits for it.
		apiserver := bare.ControlPlane.GetAPIServer().Configure()
		apiserver.Append("runtime-config",
			"admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false")
		apiserver.Append("disable-admission-plugins", "MutatingAdmissionPolicy")
		cfg, err := bare.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(bare.Stop)
		c, err = kubeconfig.NewClient(cfg)
		Expect(err).NotTo(HaveOccurred())
		dir = GinkgoT().TempDir()
	}, NodeTimeout(time.Minute))

	It("names what is missing and what to do, exit 3, and creates nothing", func(ctx SpecContext) {
		admin, err := bare.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig := filepath.Join(dir, "admin.kubeconfig")
		data, err := admin.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(kubeconfig, data, 0o600)).To(Succeed())

		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", kubeconfig, readmeExample), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(3))
		errOut := string(session.Err.Contents())
		for _, crd := range []string{"trainjobs.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org", "jobsets.jobset.x-k8s.io"} {
			Expect(errOut).To(ContainSubstring("CRD "+crd+" is not installed: install Kubeflow Trainer"), "the preflight names %s", crd)
		}
		var nss corev1.NamespaceList
		Expect(c.List(ctx, &nss, client.HasLabels{cluster.RunLabel})).To(Succeed())
		Expect(nss.Items).To(BeEmpty())
	})

	It("refuses a user without the rights it needs, naming them, exit 3", func(ctx SpecContext) {
		nobody, err := bare.AddUser(envtest.User{Name: "nobody"}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig := filepath.Join(dir, "nobody.kubeconfig")
		data, err := nobody.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(kubeconfig, data, 0o600)).To(Succeed())
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", kubeconfig, readmeExample), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(3))
		Expect(string(session.Err.Contents())).To(ContainSubstring("the kubeconfig's user may not create namespaces: simctl needs a cluster-admin kubeconfig"))
	})

	It("with the Trainer's APIs present but no isolation policy API, refuses to run unless unisolated; unisolated, starts a kwok of its own, restricted to trainersim's nodes, and removes all it made on Stop", func(ctx SpecContext) {
		// What the preflight looks for, without controllers behind it: the
		// CRDs, webhook configurations that fail open, the default runtimes.
		_, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{Paths: []string{"../../fixtures/crds/trainer", "../../fixtures/crds/jobset"}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		hook := func(name, group, resource string) admissionv1.ValidatingWebhook {
			return admissionv1.ValidatingWebhook{
				Name:                    name,
				ClientConfig:            admissionv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/" + resource)},
				Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}}}},
				FailurePolicy:           ptr.To(admissionv1.Ignore),
				SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}
		}
		Expect(c.Create(ctx, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "fail-open"}, Webhooks: []admissionv1.ValidatingWebhook{
			hook("trainjobs.example.com", "trainer.kubeflow.org", "trainjobs"), hook("jobsets.example.com", "jobset.x-k8s.io", "jobsets"),
		}})).To(Succeed())
		v := hook("m-jobsets.example.com", "jobset.x-k8s.io", "jobsets")
		Expect(c.Create(ctx, &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "fail-open"}, Webhooks: []admissionv1.MutatingWebhook{{
			Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy, SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions,
		}}})).To(Succeed())
		// A new client: the old one's mapper knew no trainer.kubeflow.org.
		c, err = kubeconfig.NewClient(bare.Config)
		Expect(err).NotTo(HaveOccurred())
		runtimes, err := os.ReadDir("../../fixtures/runtimes")
		Expect(err).NotTo(HaveOccurred())
		for _, f := range runtimes {
			data, err := os.ReadFile(filepath.Join("../../fixtures/runtimes", f.Name()))
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
			Eventually(func() error { return c.Create(ctx, u.DeepCopy()) }).WithTimeout(time.Minute).Should(Succeed(), "runtime %s", f.Name())
		}
		// A node another kwok user registered, with kwok's conventional
		// marker but not trainersim's.
		foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        "someone-elses-kwok-node",
			Labels:      map[string]string{fakegpu.KwokNodeLabel: fakegpu.KwokNodeLabelValue},
			Annotations: map[string]string{fakegpu.KwokNodeAnnotation: fakegpu.KwokNodeAnnotationValue},
		}}
		Expect(c.Create(ctx, foreign)).To(Succeed())

		admin, err := bare.AddUser(envtest.User{Name: "admin2", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		path := writeKubeconfig(dir, admin.Config())

		refused := &kubeconfig.Kubeconfig{Path: path, AssetsDir: assetsDir(), StartTimeout: time.Minute}
		Expect(refused.Start(ctx)).To(MatchError(kubeconfig.ErrNoIsolation))
		Expect(runLabelled(ctx, c)).To(BeEmpty())
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "trainersim-kwok"}, &coordinationv1.Lease{}))).To(BeTrue(), "a refused start takes no lease")

		k := &kubeconfig.Kubeconfig{Path: path, AssetsDir: assetsDir(), Nodes: []fakegpu.NodeGroup{{Profile: "cpu", Count: 1}}, StartTimeout: time.Minute, Unisolated: true}
		// The bare cluster runs no node-lifecycle controller: play it, and
		// lift the not-ready taint the API server puts on new nodes once
		// the node is Ready.
		lifecycle, stopLifecycle := context.WithCancel(ctx)
		defer stopLifecycle()
		go func() {
			defer GinkgoRecover()
			_ = wait.PollUntilContextCancel(lifecycle, pollInterval, true, func(ctx context.Context) (bool, error) {
				var nodes corev1.NodeList
				if err := c.List(ctx, &nodes, client.HasLabels{cluster.RunLabel}); err != nil {
					return false, nil
				}
				for _, n := range nodes.Items {
					if kwok.NodeReady(&n) && len(n.Spec.Taints) > 0 {
						patch := client.MergeFrom(n.DeepCopy())
						n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
						_ = c.Patch(ctx, &n, patch)
					}
				}
				return false, nil
			})
		}()
		Expect(k.Start(ctx)).To(Succeed())
		stopped := false
		DeferCleanup(func() {
			if !stopped {
				_ = k.Stop()
			}
		})
		lease := &coordinationv1.Lease{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "trainersim-kwok"}, lease)).To(Succeed())
		Expect(*lease.Spec.HolderIdentity).To(ContainSubstring(fmt.Sprintf("simctl pid %d", os.Getpid())))
		var nodes corev1.NodeList
		Expect(c.List(ctx, &nodes, client.HasLabels{cluster.RunLabel})).To(Succeed())
		Expect(nodes.Items).To(HaveLen(1))
		Expect(kwok.NodeReady(&nodes.Items[0])).To(BeTrue(), "the run's kwok made its node Ready")
		Consistently(func() bool {
			n := &corev1.Node{}
			Expect(c.Get(ctx, client.ObjectKeyFromObject(foreign), n)).To(Succeed())
			return kwok.NodeReady(n)
		}).WithTimeout(3*time.Second).Should(BeFalse(), "the run's kwok leaves a node without trainersim's label alone")
		Expect(k.Versions().Trainer).To(Equal("unknown"), "no Deployment and no simctl up says which Trainer runs")
		Expect(k.Isolated()).To(BeFalse())
		g := k.IsolateNodeGroup(fakegpu.NodeGroup{Profile: "cpu", Count: 1}, "ns")
		Expect(g.Labels).To(HaveKeyWithValue(cluster.IsolationKey, "ns"))
		Expect(g.Taints).To(BeEmpty(), "unisolated, a scenario's Pods get no toleration: its nodes carry no isolation taint")

		Expect(k.Stop()).To(Succeed())
		stopped = true
		Expect(runLabelled(ctx, c)).To(BeEmpty())
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{}))).To(BeTrue(), "the lease goes with the run's kwok")
	})
})

// writeKubeconfig writes a kubeconfig of cfg into dir and returns its path.
func writeKubeconfig(dir string, cfg *rest.Config) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, InsecureSkipTLSVerify: len(cfg.CAData) == 0}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(dir, "kubeconfig-"+time.Now().Format("150405.000000"))
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

// assetsDir is where `make assets` puts the control-plane binaries.
func assetsDir() string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "bin", "k8s", releases.KubernetesVersion))
	Expect(err).NotTo(HaveOccurred())
	return dir
}
