package linkpreview_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/killrchat/chatql/linkpreview"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<head><meta property="og:title" content="Release notes"></head>`)
	}))
	defer srv.Close()

	link, ok := linkpreview.FirstLink("new version out: " + srv.URL + "/notes.")
	if !ok {
		return
	}
	// AllowLoopback only because this example's server is on 127.0.0.1.
	f := linkpreview.New(linkpreview.Options{AllowLoopback: true})
	defer f.Close()
	p, err := f.Fetch(context.Background(), link)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Title, p.URL == srv.URL+"/notes")
	// Output: Release notes true
}
