package engine

import (
	"reflect"
	"testing"
)

// TestStatsAddCoversEveryField fills every counter of a Stats with 1 and
// checks that Add carries each into the sum: a field added to Stats but
// not to Add would silently vanish from a cluster's totals.
func TestStatsAddCoversEveryField(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				f.Index(j).SetInt(1)
			}
		default:
			t.Fatalf("Stats.%s: kind %s not handled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	var sum Stats
	sum.Add(one)
	sum.Add(one)
	s := reflect.ValueOf(sum)
	for i := 0; i < s.NumField(); i++ {
		name := v.Type().Field(i).Name
		want := int64(2)
		if name == "MaxRunning" || name == "PeakUsedBlocks" {
			want = 1 // maxima
		}
		f := s.Field(i)
		if f.Kind() == reflect.Array {
			for j := 0; j < f.Len(); j++ {
				if f.Index(j).Int() != want {
					t.Errorf("Stats.%s[%d] = %d after adding 1 twice, want %d", name, j, f.Index(j).Int(), want)
				}
			}
			continue
		}
		if f.Int() != want {
			t.Errorf("Stats.%s = %d after adding 1 twice, want %d", name, f.Int(), want)
		}
	}
}
