package flows

import (
	"reflect"
	"testing"
)

// TestCycles: the dependency cycles a flow's tasks form, each reported once, by the path
// that closes it.
func TestCycles(t *testing.T) {
	tasks := func(deps map[string][]string, order ...string) []*Task {
		var ts []*Task
		for _, id := range order {
			ts = append(ts, &Task{ID: id, DependsOn: deps[id]})
		}
		return ts
	}
	for _, tt := range []struct {
		name  string
		tasks []*Task
		want  [][]string
	}{
		{name: "a chain", tasks: tasks(map[string][]string{"b": {"a"}, "c": {"b"}}, "a", "b", "c")},
		{name: "a diamond", tasks: tasks(map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}}, "a", "b", "c", "d")},
		{name: "two tasks", tasks: tasks(map[string][]string{"a": {"b"}, "b": {"a"}}, "a", "b"), want: [][]string{{"a", "b", "a"}}},
		{name: "three tasks", tasks: tasks(map[string][]string{"a": {"c"}, "b": {"a"}, "c": {"b"}}, "a", "b", "c"), want: [][]string{{"a", "c", "b", "a"}}},
		{name: "two cycles", tasks: tasks(map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, "a", "b", "c", "d"),
			want: [][]string{{"a", "b", "a"}, {"c", "d", "c"}}},
		{name: "self and missing left out", tasks: tasks(map[string][]string{"a": {"a", "nope"}}, "a")},
		{name: "a tail into a cycle", tasks: tasks(map[string][]string{"x": {"a"}, "a": {"b"}, "b": {"a"}}, "x", "a", "b"), want: [][]string{{"a", "b", "a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cycles(tt.tasks); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cycles = %q, want %q", got, tt.want)
			}
		})
	}
}
