package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// recordedEvent is the part of an audit.k8s.io/v1 Event the spec reads.
type recordedEvent struct {
	Level      string `json:"level"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// The bodies: an object, or a JSON patch's list of operations.
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
}

var _ = Describe("a recorded run (simctl run --audit-log)", Ordered, func() {
	var simctl, dir, log string
	BeforeAll(func() {
		simctl = buildSimctl()
		dir = GinkgoT().TempDir() // the specs', until the last of them
	})

	It("records every user's writes to the TrainJob with their field managers, bodies and answers, and the Pods as they were created", func() {
		recorded := filepath.Join(dir, "recorded")
		session := startSimctl(simctl, "run", "--audit-log", recorded, "../../scenarios/multi-manager/lost-update.yaml")
		Eventually(session).WithTimeout(3 * time.Minute).Should(gexec.Exit(0))
		log = filepath.Join(recorded, "audit.log")
		Expect(session.Out).To(gbytes.Say("audit log: " + log))

		f, err := os.Open(log)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		var trainJobWrites, conflicts, jobControllerPods int
		managers := map[string]bool{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev recordedEvent
			Expect(json.Unmarshal(sc.Bytes(), &ev)).To(Succeed(), sc.Text())
			switch {
			case ev.ObjectRef.Resource == "trainjobs" && ev.ObjectRef.Subresource == "" && ev.User.Username == "admin":
				// The actors write as the admin, each with its field manager.
				trainJobWrites++
				Expect(ev.Level).To(Equal("RequestResponse"), "%s %s", ev.Verb, ev.RequestURI)
				Expect(ev.RequestObject).NotTo(BeEmpty(), "the body of %s %s", ev.Verb, ev.RequestURI)
				Expect(ev.ResponseObject).NotTo(BeEmpty(), "the answer to %s %s", ev.Verb, ev.RequestURI)
				if _, query, ok := strings.Cut(ev.RequestURI, "fieldManager="); ok {
					managers[strings.Split(query, "&")[0]] = true
				}
				if ev.ResponseStatus.Code == 409 {
					conflicts++
				}
			case ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == "" && ev.Verb == "create" && ev.User.Username == "system:serviceaccount:kube-system:job-controller":
				jobControllerPods++
				Expect(ev.Level).To(Equal("Request"))
				var pod map[string]any
				Expect(json.Unmarshal(ev.RequestObject, &pod)).To(Succeed())
				Expect(pod).To(HaveKey("spec"), "the Pod as the Job controller created it")
			}
		}
		Expect(sc.Err()).NotTo(HaveOccurred())
		Expect(trainJobWrites).To(BeNumerically(">=", 7), "the scenario's writes to TrainJob llm")
		Expect(managers).To(HaveKey("kubeflow-sdk"))
		Expect(managers).To(HaveKey("kueue-admission"))
		Expect(managers).To(HaveKey("platform-policy"))
		Expect(conflicts).To(Equal(2), "the stale update and the stale merge patch, refused 409")
		Expect(jobControllerPods).To(BeNumerically(">=", 1))
	})

	It("imports back into a scenario that lints and replays to the same verdict, its refusals and final entries expected (simctl import)", func() {
		Expect(log).NotTo(BeEmpty(), "the recording spec ran first")
		imported := filepath.Join(dir, "imported.yaml")
		session := startSimctl(simctl, "import", "--audit-log", log, "-o", imported)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(session.Err).To(gbytes.Say(`: 8 writes of 4 actors`))
		data, err := os.ReadFile(imported)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("status: 409"))
		Expect(string(data)).To(ContainSubstring("manager: kueue.x-k8s.io/manager"))

		replay := startSimctl(simctl, "run", "-v", imported)
		Eventually(replay).WithTimeout(3 * time.Minute).Should(gexec.Exit(0))
		Expect(replay.Out).To(gbytes.Say("refused 409 Conflict"))
		Expect(replay.Out).To(gbytes.Say(`PASS  imported-llm`))
	})

	It("refuses a log that already holds one, exit 2, before it starts a cluster", func() {
		used := filepath.Join(dir, "used")
		Expect(os.MkdirAll(used, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(used, "audit.log"), []byte("{}\n"), 0o644)).To(Succeed())
		session := startSimctl(simctl, "run", "--audit-log", used, "../../scenarios/multi-manager/lost-update.yaml")
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(session.Err).To(gbytes.Say("already holds a log"))
		Expect(session.Out).NotTo(gbytes.Say("cluster ready"))
	})
})
