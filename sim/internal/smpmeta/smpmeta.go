// Package smpmeta answers, for a Go API type, what a strategic merge patch
// does at a field: the type below it, and the merge key of a list (none when
// the list is replaced whole). simctl explain and simctl migrate walk
// objects field by field with it.
package smpmeta

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// PodTemplate describes a corev1.PodTemplateSpec: the type Trainer v2.1.0
// merges a podTemplateOverride with (trainingruntime.go:226), and that of a
// replicated job's Pod template in the JobSet spec a runtimePatches entry is
// merged with.
var PodTemplate = MustFromStruct(corev1.PodTemplateSpec{})

// MustFromStruct returns the patch meta of v, a struct; it panics otherwise,
// as a program that asks for another kind of value is wrong.
func MustFromStruct(v any) strategicpatch.PatchMetaFromStruct {
	m, err := strategicpatch.NewPatchMetaFromStruct(v)
	if err != nil {
		panic(err)
	}
	return m
}

// Field returns the type of field k of the type meta describes (of the
// values, for a map), or nil when unknown (then nothing below is merged by
// key).
func Field(meta strategicpatch.LookupPatchMeta, k string) strategicpatch.LookupPatchMeta {
	s, ok := meta.(strategicpatch.PatchMetaFromStruct)
	if !ok || s.T == nil {
		return nil
	}
	t := s.T
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map {
		return strategicpatch.PatchMetaFromStruct{T: t.Elem()}
	}
	sub, _, err := s.LookupPatchMetadataForStruct(k)
	if err != nil {
		return nil
	}
	return sub
}

// Slice returns the element type and merge key of list field k of the type
// meta describes; the key is empty for a list the strategic merge replaces
// whole.
func Slice(meta strategicpatch.LookupPatchMeta, k string) (strategicpatch.LookupPatchMeta, string) {
	s, ok := meta.(strategicpatch.PatchMetaFromStruct)
	if !ok || s.T == nil {
		return nil, ""
	}
	t := s.T
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, ""
	}
	elem, pm, err := s.LookupPatchMetadataForSlice(k)
	if err != nil {
		return nil, ""
	}
	if !slices.Contains(pm.GetPatchStrategies(), "merge") {
		return elem, ""
	}
	return elem, pm.GetPatchMergeKey()
}

// AllObjects reports whether every item of list is an object.
func AllObjects(list []any) bool {
	for _, v := range list {
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	}
	return true
}
