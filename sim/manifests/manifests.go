// Package manifests reads the Kubernetes objects of YAML manifests (the
// fixtures' CRDs, webhook configurations, runtimes and install manifests,
// a user's TrainJobs) into unstructured or typed objects (Decode), and
// parses the YAML streams whose problems are reported by position into
// node trees (Documents): the two readers of multi-document YAML.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ReadObjects decodes every YAML document of every .yaml file under root (a
// file or a directory, walked in lexical order) into unstructured objects.
func ReadObjects(fsys fs.FS, root string) ([]*unstructured.Unstructured, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list manifests under %s: %w", root, err)
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("failed to read manifest %s: %w", f, err)
		}
		decoded, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("failed to decode manifest %s: %w", f, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// Decode decodes every YAML (or JSON) document of data into an
// unstructured object, skipping empty documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func toTyped[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("failed to convert %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return out, nil
}

// ReadCRDs reads every CustomResourceDefinition under dir.
func ReadCRDs(fsys fs.FS, dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := ReadObjects(fsys, dir)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd, err := toTyped[apiextensionsv1.CustomResourceDefinition](u)
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// ReadWebhooks reads the webhook configurations in file and renames each to
// prefix + name: JobSet's config/components call theirs
// "mutating-webhook-configuration" and "validating-webhook-configuration",
// which its config/default prefixes with "jobset-".
func ReadWebhooks(fsys fs.FS, file, prefix string) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	objs, err := ReadObjects(fsys, file)
	if err != nil {
		return nil, nil, err
	}
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	for _, u := range objs {
		u.SetName(prefix + u.GetName())
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			m, err := toTyped[admissionv1.MutatingWebhookConfiguration](u)
			if err != nil {
				return nil, nil, err
			}
			muts = append(muts, m)
		case "ValidatingWebhookConfiguration":
			v, err := toTyped[admissionv1.ValidatingWebhookConfiguration](u)
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, v)
		default:
			return nil, nil, fmt.Errorf("failed to read webhooks: unexpected kind %s in %s", u.GetKind(), path.Clean(file))
		}
	}
	return muts, vals, nil
}
