package pipelines

import (
	"fmt"
	"sort"

	"github.com/agext/levenshtein"
)

// NameSuggestion returns the candidate closest to given, or "" when none
// is close enough to be a likely typo.
func NameSuggestion(given string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean returns " Did you mean %q?" for the closest candidate, or "".
func DidYouMean(given string, candidates []string) string {
	if s := NameSuggestion(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
