package startup

import (
	"os"
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

// setListThenWatch makes the clients of this process list, then watch, as
// every provider's Start does: client-go's WatchListClient
// (on by default since 1.35) is off unless KUBE_FEATURE_WatchListClient says
// otherwise. With it, an informer's first sync ends with the API server's
// "initial events end" bookmark, which its watch cache sends about once a
// second; every informer of a new controller manager or scenario waited up
// to a second for it. A LIST and a WATCH from its resourceVersion give the
// informer the same objects and the same events. The controllers of a
// cluster (the Trainer's Deployment on kind) keep their own default. It
// changes client-go's feature gates for the whole process, once; importing
// the package changes nothing.
func setListThenWatch() {
	listThenWatchOnce.Do(func() {
		if _, set := os.LookupEnv(watchListEnv); set {
			return
		}
		clientfeatures.ReplaceFeatureGates(listThenWatch{clientfeatures.FeatureGates()})
	})
}

var listThenWatchOnce sync.Once

const watchListEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// listThenWatch turns WatchListClient off and leaves every other gate as
// the gates it wraps have it.
type listThenWatch struct{ clientfeatures.Gates }

func (g listThenWatch) Enabled(key clientfeatures.Feature) bool {
	if key == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(key)
}
