package metrics

import (
	"bytes"
	"path/filepath"
)

// ReadAIPerfWarmups reads the warm-up records of an aiperf export
// directory: the profile_export.jsonl lines whose benchmark_phase is not
// "profiling", in file order. ReadAIPerf leaves them out, as InferenceX's
// loader does; a validation needs them for the run's first request, the
// cold full prefill (often a warm-up primer).
func ReadAIPerfWarmups(dir string) ([]MeasuredRequest, error) {
	p := filepath.Join(dir, AIPerfRecordsFile)
	data, err := readFileBounded(p)
	if err != nil {
		return nil, err
	}
	var out []MeasuredRequest
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		q, keep, err := parseAIPerfRecord(p, lineNo, line, true)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, q)
		}
	}
	return out, nil
}
