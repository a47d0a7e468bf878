// Package didyoumean finds, among the names a user could have meant, the one a typo most
// likely stands for: the flow validator's keys, task ids and kinds, a layer's
// properties, a table's columns.
package didyoumean

import "strings"

// Nearest returns the candidate closest to s (Levenshtein distance, case ignored) when
// it is close enough to be a likely typo: within 2 edits (1 for names of up to 4
// letters), or starting with s when s has more than 3 letters; else "".
func Nearest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(s) <= 4 {
		limit = 1
	}
	if bestD <= limit || (best != "" && len(s) > 3 && strings.HasPrefix(strings.ToLower(best), strings.ToLower(s))) {
		return best
	}
	return ""
}

// levenshtein is the edit distance between a and b, in bytes.
func levenshtein(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
