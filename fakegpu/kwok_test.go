package fakegpu

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	configv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
)

// kwokScheme knows kwok's own config types, for strict decoding.
var kwokScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kwokv1alpha1.AddToScheme(s))
	// config.kwok.x-k8s.io has no AddToScheme; kwok decodes it by kind.
	s.AddKnownTypes(configv1alpha1.GroupVersion, &configv1alpha1.KwokConfiguration{})
	return s
}()

// decodeKwokConfig decodes every document of data strictly into kwok's Go
// types: an unknown field, a duplicate field or an unknown apiVersion/kind is
// an error.
func decodeKwokConfig(data []byte) ([]runtime.Object, error) {
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, kwokScheme, kwokScheme, json.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read document %d: %w", i, err)
		}
		obj, _, err := serializer.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("failed to decode document %d: %w", i, err)
		}
		objs = append(objs, obj)
	}
}

func mustDecodeKwokConfig(t *testing.T) []runtime.Object {
	t.Helper()
	objs, err := decodeKwokConfig(KwokConfig())
	if err != nil {
		t.Fatalf("failed to decode KwokConfig() strictly: %v", err)
	}
	return objs
}

// TestDecodeKwokConfigIsStrict makes sure the strict decoding above would
// catch a misspelt field, so that TestKwokConfigDecodesStrictly means
// something.
func TestDecodeKwokConfigIsStrict(t *testing.T) {
	config := string(KwokConfig())
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{
			name:    "unknown stage field",
			doc:     strings.Replace(config, "  resourceRef:\n", "  resourceRefs: {}\n  resourceRef:\n", 1),
			wantErr: `unknown field "spec.resourceRefs"`,
		},
		{
			name:    "unknown option",
			doc:     strings.Replace(config, "  nodeIP: 127.0.0.1\n", "  nodeIP: 127.0.0.1\n  nodeIp: 127.0.0.2\n", 1),
			wantErr: `unknown field "options.nodeIp"`,
		},
		{
			name:    "duplicate field",
			doc:     strings.Replace(config, "  nodeIP: 127.0.0.1\n", "  nodeIP: 127.0.0.1\n  nodeIP: 127.0.0.2\n", 1),
			wantErr: `key "nodeIP" already set`,
		},
		{
			name:    "unknown kind",
			doc:     config + "---\napiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stages\nmetadata:\n  name: x\n",
			wantErr: `no kind "Stages" is registered`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.doc == config {
				t.Fatal("test case did not change the configuration")
			}
			_, err := decodeKwokConfig([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("decodeKwokConfig error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestKwokConfigDecodesStrictly(t *testing.T) {
	objs := mustDecodeKwokConfig(t)

	var kinds, stages []string
	for _, obj := range objs {
		switch o := obj.(type) {
		case *configv1alpha1.KwokConfiguration:
			kinds = append(kinds, "KwokConfiguration")
		case *kwokv1alpha1.Stage:
			kinds = append(kinds, "Stage")
			stages = append(stages, o.Name)
			checkStage(t, o)
		default:
			t.Errorf("unexpected document of type %T", obj)
		}
	}
	if diff := cmp.Diff([]string{"KwokConfiguration", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage", "Stage"}, kinds); diff != "" {
		t.Errorf("document kinds mismatch (-want +got):\n%s", diff)
	}
	wantStages := []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-succeed", "pod-fail", "pod-restart", "pod-crash-loop", "pod-back-off-restart", "pod-local-path-helper", "pod-terminate", "pod-delete"}
	if diff := cmp.Diff(wantStages, stages); diff != "" {
		t.Errorf("stage names mismatch (-want +got):\n%s", diff)
	}
}

// checkStage checks what kwok would silently accept but not do as meant.
func checkStage(t *testing.T, s *kwokv1alpha1.Stage) {
	t.Helper()
	if s.Spec.Selector == nil {
		// kwok's lifecycle.NewStage drops a Stage without a selector.
		t.Errorf("stage %s has no selector, kwok would ignore it", s.Name)
	}
	if s.Spec.Next != nil {
		t.Errorf("stage %s uses the deprecated next, use steps", s.Name)
	}
	if len(s.Spec.Steps) == 0 {
		t.Errorf("stage %s has no steps", s.Name)
	}
	if ref := s.Spec.ResourceRef; ref.APIGroup != "v1" || (ref.Kind != "Node" && ref.Kind != "Pod") {
		t.Errorf("stage %s acts on %+v, want a v1 Node or Pod", s.Name, ref)
	}
	if s.Spec.Selector != nil {
		for i, e := range s.Spec.Selector.MatchExpressions {
			if e.Key != "" || e.Operator != "" || len(e.Values) != 0 {
				t.Errorf("stage %s: matchExpressions[%d] uses the deprecated key/operator/values, use jq", s.Name, i)
			}
		}
	}
}

func TestKwokConfigurationMatchesArgs(t *testing.T) {
	var conf *configv1alpha1.KwokConfiguration
	for _, obj := range mustDecodeKwokConfig(t) {
		if c, ok := obj.(*configv1alpha1.KwokConfiguration); ok {
			conf = c
		}
	}
	if conf == nil {
		t.Fatal("no KwokConfiguration in KwokConfig()")
	}
	f, tr := false, true
	want := configv1alpha1.KwokConfigurationOptions{
		ManageAllNodes:                    &f,
		ManageNodesWithAnnotationSelector: KwokNodeAnnotationSelector,
		ManageNodesWithLabelSelector:      KwokNodeLabelSelector,
		NodeIP:                            KwokNodeIP,
		CIDR:                              KwokPodCIDR,
		NodeLeaseDurationSeconds:          uint(FastHeartbeat.NodeLeaseDurationSeconds),
		EnableDebuggingHandlers:           &f,
		EnableContentionProfiling:         &f,
		EnableProfilingHandler:            &f,
		PodPlayStageParallelism:           4,
		NodePlayStageParallelism:          4,
		NodeLeaseParallelism:              4,
		PodsOnNodeSyncParallelism:         1,
		EnablePodsOnNodeSyncListPager:     &tr,
		EnablePodsOnNodeSyncStreamWatch:   &f,
	}
	if diff := cmp.Diff(want, conf.Options); diff != "" {
		t.Errorf("KwokConfiguration options mismatch (-want +got):\n%s", diff)
	}
	if conf.Options.ServerAddress != "" || conf.Options.NodePort != 0 {
		t.Errorf("KwokConfiguration would start a server: serverAddress %q, nodePort %d", conf.Options.ServerAddress, conf.Options.NodePort)
	}
}

// TestKwokConfigurationIsDefaulted checks that the embedded
// KwokConfiguration states every option kwok defaults: kwok applies its
// defaults only when it is given no KwokConfiguration at all, and exits when,
// for example, nodeLeaseParallelism is 0.
func TestKwokConfigurationIsDefaulted(t *testing.T) {
	for _, obj := range mustDecodeKwokConfig(t) {
		conf, ok := obj.(*configv1alpha1.KwokConfiguration)
		if !ok {
			continue
		}
		defaulted := conf.DeepCopy()
		configv1alpha1.SetObjectDefaults_KwokConfiguration(defaulted)
		if diff := cmp.Diff(conf, defaulted); diff != "" {
			t.Errorf("kwok's defaulting would change the KwokConfiguration, so kwok would run without those options set (-ours +defaulted):\n%s", diff)
		}
	}
}

func TestKwokConfigReturnsCopy(t *testing.T) {
	c := KwokConfig()
	c[0] = 'X'
	if KwokConfig()[0] == 'X' {
		t.Error("changing the result of KwokConfig changed the embedded configuration")
	}
}

func TestKwokArgs(t *testing.T) {
	got := KwokArgs("/tmp/run/kubeconfig", "/tmp/run/kwok.yaml", Heartbeat{})
	want := []string{
		"--kubeconfig=/tmp/run/kubeconfig",
		"--config=/tmp/run/kwok.yaml",
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--manage-nodes-with-label-selector=type=kwok,app.kubernetes.io/managed-by=trainersim",
		"--server-address=",
		"--node-port=0",
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.0/16",
		"--node-lease-duration-seconds=16",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KwokArgs mismatch (-want +got):\n%s", diff)
	}
}

// TestKwokArgsHeartbeat checks that the Lease KWOK holds is the heartbeat's,
// renewed every quarter of it, and that the zero value is the fast one.
func TestKwokArgsHeartbeat(t *testing.T) {
	for _, tc := range []struct {
		hb    Heartbeat
		flag  string
		renew time.Duration
	}{
		{Heartbeat{}, "--node-lease-duration-seconds=16", 4 * time.Second},
		{FastHeartbeat, "--node-lease-duration-seconds=16", 4 * time.Second},
		{KubernetesHeartbeat, "--node-lease-duration-seconds=40", 10 * time.Second},
	} {
		args := KwokArgs("/kubeconfig", "/kwok.yaml", tc.hb)
		if !slices.Contains(args, tc.flag) {
			t.Errorf("KwokArgs with %s = %q, want %s", tc.hb, args, tc.flag)
		}
		if got := tc.hb.OrFast().RenewInterval(); got != tc.renew {
			t.Errorf("%s renews every %s, want %s", tc.hb, got, tc.renew)
		}
	}
	if got, want := KubernetesHeartbeat.String(), "Kubernetes defaults (Lease renewed every 10s, 50s of grace)"; got != want {
		t.Errorf("KubernetesHeartbeat.String() = %q, want %q", got, want)
	}
}

// TestKwokArgsConfigPathCSV checks that --config, which pflag splits as a CSV
// record, yields exactly the given path whatever it contains.
func TestKwokArgsConfigPathCSV(t *testing.T) {
	for _, path := range []string{
		"/tmp/kwok.yaml",
		"/tmp/a,b/kwok.yaml",
		`/tmp/say "hi"/kwok.yaml`,
		"/tmp/ leading space/kwok.yaml",
		" /tmp/kwok.yaml",
	} {
		t.Run(path, func(t *testing.T) {
			var value string
			for _, arg := range KwokArgs("/kubeconfig", path, FastHeartbeat) {
				if v, ok := strings.CutPrefix(arg, "--config="); ok {
					value = v
				}
			}
			// pflag's stringSlice reads its value with encoding/csv like this.
			record, err := csv.NewReader(strings.NewReader(value)).Read()
			if err != nil {
				t.Fatalf("failed to read --config=%s as CSV: %v", value, err)
			}
			if diff := cmp.Diff([]string{path}, record); diff != "" {
				t.Errorf("--config=%s mismatch (-want +got):\n%s", value, diff)
			}
		})
	}
}
