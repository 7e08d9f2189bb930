// Package preview holds the browser tests of the controller's local preview
// (/_preview/): they drive headless Chromium with chromedp against
// examples/research-agent in local mode. It is a module of its own so that
// chromedp never enters the build list of the SDK's users.
package preview
