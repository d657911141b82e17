package catalog

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// loadNamedYAML parses every file matching pattern in fsys, in name order,
// and checks that each file names itself: key (e.g. "name", "chip") must
// equal the file's base name without ".yaml". Errors name the file.
func loadNamedYAML[T any](fsys fs.FS, pattern, key string, parse func(file string, data []byte) (T, error), name func(T) string) ([]T, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]T, 0, len(files))
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("catalog: %v", err)
		}
		v, err := parse("catalog/"+file, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(file), ".yaml"); name(v) != want {
			return nil, fmt.Errorf("catalog/%s: key %q: %q, want the file's name %q", file, key, name(v), want)
		}
		out = append(out, v)
	}
	return out, nil
}
