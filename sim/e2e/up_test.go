package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/policy"
)

var _ = Describe("simctl up", Ordered, func() {
	var (
		session    *gexec.Session
		kubeconfig string
		tmp        string // its TMPDIR
	)

	BeforeAll(func(ctx SpecContext) {
		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		tmp = GinkgoT().TempDir()
		cmd := exec.Command(buildSimctl(), "up", "--kubeconfig", kubeconfig, "--pods-start-after", "2s", "--pods-succeed-after", "3s")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var err error
		session, err = gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill() })
		Eventually(session).WithTimeout(simctlReadyTimeout).Should(gbytes.Say(`cluster ready in`))
		for _, component := range []string{"kube-apiserver+etcd", "kube-controller-manager", "kube-scheduler", "kwok", "trainer+jobset-controllers", "storage-class", "local-path-provisioner", "nodes"} {
			Expect(session.Out.Contents()).To(ContainSubstring(component), "no progress line for %s", component)
		}
	}, NodeTimeout(simctlReadyTimeout+time.Minute))

	It("writes a kubeconfig that shows the GPU nodes with their labels, taints and allocatable GPUs", func(ctx SpecContext) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		var nodes corev1.NodeList
		Expect(c.List(ctx, &nodes)).To(Succeed())
		byProfile := map[string]int{}
		for _, n := range nodes.Items {
			profile := n.Labels[fakegpu.ProfileLabel]
			byProfile[profile]++
			if profile != "nvidia-h100-80gb" {
				continue
			}
			Expect(n.Labels).To(HaveKeyWithValue("nvidia.com/gpu.present", "true"))
			Expect(n.Labels).To(HaveKeyWithValue("nvidia.com/gpu.count", "8"))
			Expect(n.Labels).To(HaveKey("nvidia.com/gpu.product"))
			Expect(n.Spec.Taints).To(ContainElement(corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}))
			gpus := n.Status.Allocatable[fakegpu.ResourceGPU]
			Expect(gpus.Value()).To(BeEquivalentTo(8))
		}
		Expect(byProfile).To(Equal(map[string]int{"nvidia-h100-80gb": 2, "cpu": 1}))
	})

	It("starts and ends the Pods no scenario owns as --pods-start-after and --pods-succeed-after say, and leaves other Pods their own word", func(ctx SpecContext) {
		Eventually(session).WithTimeout(time.Minute).Should(gbytes.Say(`pods no scenario owns: start after 2s, succeed after 3s`))
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "up-pods"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		pod := func(name string, annotations map[string]string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Annotations: annotations},
				Spec: corev1.PodSpec{
					Containers:                   []corev1.Container{{Name: "main", Image: "busybox"}},
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
				},
			}
		}
		plain := pod("plain", nil)
		own := pod("own", map[string]string{policy.LifecycleSucceedAfter: "1s"})
		for _, p := range []*corev1.Pod{plain, own} {
			Eventually(func() error { return c.Create(ctx, p) }).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed(), "the namespace's default ServiceAccount is made by kube-controller-manager")
		}
		Expect(plain.Annotations).To(Equal(map[string]string{policy.LifecycleStartAfter: "2s", policy.LifecycleSucceedAfter: "3s"}))
		Expect(own.Annotations).To(Equal(map[string]string{policy.LifecycleSucceedAfter: "1s"}))

		var got corev1.Pod
		Eventually(func() corev1.PodPhase {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(plain), &got)).To(Succeed())
			return got.Status.Phase
		}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Equal(corev1.PodSucceeded))
		// The cluster's own timestamps (whole seconds): bound, then started
		// at least 2s later, then ended at least 3s after that.
		var scheduled time.Time
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				scheduled = cond.LastTransitionTime.Time
			}
		}
		Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		terminated := got.Status.ContainerStatuses[0].State.Terminated
		Expect(terminated).NotTo(BeNil())
		Expect(terminated.StartedAt.Sub(scheduled)).To(BeNumerically(">=", 2*time.Second))
		Expect(terminated.FinishedAt.Sub(terminated.StartedAt.Time)).To(BeNumerically(">=", 3*time.Second))

		// A scenario's namespace (labelled for isolation) is left to the
		// scenario's own rules.
		scenarioNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "up-scenario", Labels: map[string]string{cluster.IsolationKey: "up-scenario"}}}
		Expect(c.Create(ctx, scenarioNS)).To(Succeed())
		inScenario := pod("in-scenario", nil)
		inScenario.Namespace = scenarioNS.Name
		Eventually(func() error { return c.Create(ctx, inScenario, client.DryRunAll) }).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed())
		Expect(inScenario.Annotations).To(BeEmpty())
	})

	It("leaves no process behind when killed with SIGKILL, and no file the next start does not remove", func(ctx SpecContext) {
		// What the cluster writes is in its work dir (the webhooks'
		// serving certificates too, which envtest puts in a directory of
		// its own).
		entries, err := os.ReadDir(tmp)
		Expect(err).NotTo(HaveOccurred())
		var files []string
		for _, e := range entries {
			files = append(files, e.Name())
		}
		Expect(files).To(ConsistOf(HavePrefix("trainersim-")), "TMPDIR of simctl up")
		children := childProcesses(session.Command.Process.Pid)
		names := map[string]bool{}
		for _, name := range children {
			names[name] = true
		}
		for _, want := range []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kwok"} {
			Expect(names).To(HaveKey(want), "simctl has no %s child: %v", want, children)
		}
		Expect(session.Command.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(session).WithTimeout(processExitTimeout).Should(gexec.Exit())
		Eventually(func() []string { return stillAlive(children) }).
			WithTimeout(processExitTimeout).WithPolling(pollInterval).Should(BeEmpty())
		// The next start removes the work dir of a harness that is gone.
		startup.RemoveStaleWorkDirs(tmp)
		Expect(os.ReadDir(tmp)).To(BeEmpty(), "TMPDIR of the killed simctl up once the next start cleaned it")
	})
})

// stillAlive names the processes of processes (pid to command name) that
// are still running.
func stillAlive(processes map[int]string) []string {
	var alive []string
	for pid, name := range processes {
		if processAlive(pid) {
			alive = append(alive, fmt.Sprintf("%s (pid %d)", name, pid))
		}
	}
	return alive
}

// childProcesses maps the pid of every direct child of parent to its command
// name (at most 15 characters, as the kernel keeps it), read from /proc.
func childProcesses(parent int) map[int]string {
	children := map[int]string{}
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, ppid, _, ok := procStat(pid)
		if ok && ppid == parent {
			children[pid] = name
		}
	}
	return children
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	_, _, state, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// procStat reads the command name, parent pid and state of pid.
func procStat(pid int) (name string, ppid int, state string, ok bool) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, "", false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", 0, "", false
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return "", 0, "", false
	}
	fields := strings.Fields(line[end+1:])
	if len(fields) < 2 {
		return "", 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, "", false
	}
	return line[open+1 : end], ppid, fields[0], true
}
