package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
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

// decodeStrictYAML decodes one YAML document into v, refusing unknown keys,
// an empty file and a second document; errors name the file.
func decodeStrictYAML(name string, data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: empty file", name)
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: more than one YAML document", name)
	}
	return nil
}
