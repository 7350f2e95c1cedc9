package view

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	watchapi "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// protobuf is the client-go scheme's protobuf serializer: what the API
// server encodes a built-in resource's watch with, and what
// kube-controller-manager and kube-scheduler decode it with.
func protobuf(t *testing.T) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("the scheme has no protobuf stream serializer")
	}
	return info
}

func pod(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// TestProtobufStream holds and coalesces the events of a protobuf watch as
// the API server encodes them (a metav1.WatchEvent per length-delimited
// frame, its object in the protobuf envelope), and the component decodes
// what it reads with client-go's own watch decoder.
func TestProtobufStream(t *testing.T) {
	info := protobuf(t)
	events := make(chan watchapi.Event, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
		for {
			select {
			case e := <-events:
				raw, err := runtime.Encode(info.Serializer, e.Object)
				if err != nil {
					t.Error(err)
					return
				}
				if err := enc.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "kube-scheduler", Resource: "pods", Namespace: "ns", ObjectName: "low", Coalesce: true}); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: reg.Wrap("kube-scheduler")(http.DefaultTransport)}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/pods?watch=true", nil)
	req.Header.Set("Accept", runtime.ContentTypeProtobuf+";stream=watch")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(resp.Body)
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), scheme.Codecs.UniversalDeserializer())
	t.Cleanup(dec.Close)
	gots := make(chan got, 8)
	go func() {
		defer close(gots)
		for {
			typ, obj, err := dec.Decode()
			if err != nil {
				return
			}
			p := obj.(*corev1.Pod)
			gots <- gotOf(typ, p)
		}
	}()
	events <- watchapi.Event{Type: watchapi.Added, Object: pod("ns", "low", "2")}
	events <- watchapi.Event{Type: watchapi.Modified, Object: pod("ns", "low", "3")}
	events <- watchapi.Event{Type: watchapi.Added, Object: pod("ns", "high", "4")}
	if diff := cmp.Diff(gotOf(watchapi.Added, pod("", "high", "4")), next(t, gots)); diff != "" {
		t.Errorf("event of another object mismatch (-want +got):\n%s", diff)
	}
	none(t, gots)
	waitHolding(t, reg, "v", 2)
	if n := reg.Release("v", "released"); n != 2 {
		t.Errorf("Release = %d, want 2", n)
	}
	if diff := cmp.Diff(gotOf(watchapi.Added, pod("", "low", "3")), next(t, gots)); diff != "" {
		t.Errorf("coalesced event mismatch (-want +got):\n%s", diff)
	}
	var kept []string
	for _, e := range reg.Events("v") {
		kept = append(kept, e.Type+" "+e.Object+" "+e.ResourceVersion)
	}
	if diff := cmp.Diff([]string{"ADDED Pod/low 2", "MODIFIED Pod/low 3"}, kept); diff != "" {
		t.Errorf("events kept back mismatch (-want +got):\n%s", diff)
	}
}

func gotOf(typ watchapi.EventType, p *corev1.Pod) got {
	return got{string(typ), p.Name, p.ResourceVersion}
}
