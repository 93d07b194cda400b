package client

import "time"

// ConsolePath is where the bridge listener serves the console (docs/console.md).
const ConsolePath = "/console/"

// ConsoleCode answers POST /console/api/session/code: a one-time sign-in
// code for the console and the URL that uses it.
type ConsoleCode struct {
	Code      string    `json:"code"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}
