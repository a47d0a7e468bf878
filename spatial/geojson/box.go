package geojson

import "unsafe"

// boxedString is *s as an interface value whose data is s itself, where any(*s) would
// allocate a copy of the string header: flush boxes a feature's string properties out
// of one []string, one allocation for all of them instead of one each. *s must never
// be written again, which a string's header in a slice flush made is not.
func boxedString(s *string) any {
	v := any("")
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = unsafe.Pointer(s)
	return v
}
