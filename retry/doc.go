// Package retry is geoflow's rate-limit handler: every HTTP request of a flow
// (WFS pages, tiles, imagery) goes through a Handler, which
//
//   - classifies each outcome (Class) into retried and permanent failures,
//     treating a body cut off mid-stream as transient and fetching the whole
//     unit again;
//   - backs off with jitter (Policy), obeying Retry-After with a cap;
//   - paces ahead of the server's quota per host: a configured rate and
//     concurrency (RateLimit), the X-RateLimit-* and IETF RateLimit headers
//     spread over the time to the reset, and an adaptive rate that is cut on
//     429 and regrows along the AWS-adaptive cubic curve;
//   - spends a per-host retry budget so a failing server cannot cause a retry
//     storm, and opens a per-host circuit breaker after repeated failures.
//
// Each host policy is its own piece, in its own file, with its own state per
// host: backoff (Policy and its jitter, policy.go), the Retry-After gate
// (gate.go), pacing (pacing.go), the retry budget (budget.go) and the circuit
// breaker (breaker.go). Handler.Do (handler.go) composes them around each
// attempt; send.go makes the round trip and classes the answer, with the
// classes of class.go. A fault of where output goes (a dlq.Classed error of a
// sink class, from a read callback) is never the host's: Do returns it at once.
//
// A Tally (count.go) carried in a request's context counts what its requests asked of
// each host (requests, retries, 429s, waits, breaker openings): the runner gives each
// unit its own, so one Handler shared by concurrent units still tells their figures
// apart.
//
// All waits end at once when the context is cancelled, and all time comes
// from an injectable Clock so tests never sleep.
package retry
