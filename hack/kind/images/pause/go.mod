module github.com/trainersim/trainersim/hack/kind/images/pause

go 1.26.0
