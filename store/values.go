package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ColumnText renders a property value as text for a column of type t, checking what a
// database's cast would otherwise refuse with a message that names no feature: an
// integer column takes integral numbers only, a number column numbers, a boolean column
// true/false/1/0/t/f/yes/no. "" means NULL. Stores convert the text further as they need.
func ColumnText(v any, t ColumnType) (string, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = strings.TrimSpace(x)
		if t == TypeText {
			s = x
		}
	case float64:
		if t == TypeBigint {
			if x != math.Trunc(x) || math.Abs(x) > 1<<63 {
				return "", errors.New("not integral")
			}
			return strconv.FormatInt(int64(x), 10), nil
		}
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		s = strconv.FormatInt(x, 10)
	case int:
		s = strconv.Itoa(x)
	case bool:
		s = strconv.FormatBool(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", err
		}
		s = string(b)
	}
	if s == "" {
		return "", nil
	}
	switch t {
	case TypeBigint:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f == math.Trunc(f) {
				return strconv.FormatInt(int64(f), 10), nil
			}
			return "", err
		}
	case TypeDouble, TypeNumeric:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return "", err
		}
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true", "1", "t", "yes":
			return "true", nil
		case "false", "0", "f", "no":
			return "false", nil
		}
		return "", errors.New("not a boolean")
	}
	return s, nil
}

// IncompatibleTableError says why an existing table cannot receive a task's features.
type IncompatibleTableError struct {
	Table    string
	Problems []string
}

func (e *IncompatibleTableError) Error() string {
	return fmt.Sprintf("table %s exists but cannot take these features: %s (drop it, rename it, or choose another target.table)",
		e.Table, strings.Join(e.Problems, "; "))
}

// ColumnProblems compares the columns a table has with those it needs (name to type name,
// as the store spells types) and says what does not match, in column order.
func ColumnProblems(want, have map[string]string) []string {
	var problems []string
	for _, col := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[col]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %q is missing", col))
		case got != want[col]:
			problems = append(problems, fmt.Sprintf("column %q is %s, not %s", col, got, want[col]))
		}
	}
	return problems
}
