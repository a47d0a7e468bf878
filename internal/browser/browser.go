// Package browser drives Debian's headless Chromium over the DevTools protocol
// (chromedp), for the web UI's tests and screenshots. It is never imported by product
// packages.
package browser

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// ErrNoChromium says no Chromium binary was found.
var ErrNoChromium = errors.New("browser: no chromium: install Debian's chromium (make test does, as root), or set GEOFLOW_CHROMIUM")

// Path finds Chromium: $GEOFLOW_CHROMIUM, else chromium, chromium-browser or
// google-chrome on PATH.
func Path() (string, error) {
	if p := os.Getenv("GEOFLOW_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Options size the window.
type Options struct {
	// Width and Height of the window in CSS pixels. Default to 1400 x 900.
	Width, Height int
}

// Start launches a headless Chromium and returns a browser context for chromedp.Run;
// cancel stops the browser. WebGL (which the map needs) is rendered in software by
// SwiftShader, as on a machine without a GPU; background networking is off, as a
// closed network refuses it.
func Start(ctx context.Context, o *Options) (context.Context, context.CancelFunc, error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	w, h := 1400, 900
	if o != nil && o.Width > 0 {
		w, h = o.Width, o.Height
	}
	dir, err := os.MkdirTemp("", "geoflow-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Headless,
		chromedp.NoSandbox, // root, in a container
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(w, h),
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("ignore-gpu-blocklist", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // start it now, to fail here
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return bctx, func() {
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(dir)
	}, nil
}
