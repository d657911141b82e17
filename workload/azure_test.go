package workload

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

func azure(t testing.TB, text string, spec TraceSpec) ([]Request, error) {
	t.Helper()
	src, err := NewAzure(strings.NewReader(text), "azure.csv", spec)
	if err != nil {
		return nil, err
	}
	return drain(t, src)
}

const azureHead = "TIMESTAMP,ContextTokens,GeneratedTokens\n"

func TestAzureArrivalsFromFirstRow(t *testing.T) {
	text := azureHead + `2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:04.0319600,3180,8
2023-11-16 18:17:04.5,110,27
2023-11-16 18:18:04,34,12
2023-11-17 00:00:00.000000001,5,5`
	want := []time.Duration{0, 52 * time.Millisecond, 520040 * time.Microsecond, 60020040 * time.Microsecond,
		(5*3600+42*60)*time.Second + 56*time.Second + 20040*time.Microsecond + time.Nanosecond}
	reqs, err := azure(t, text, TraceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if r.Arrival != want[i] {
			t.Errorf("row %d at %v, want %v", i+1, r.Arrival, want[i])
		}
	}
	if reqs[0].InputLen != 4808 || reqs[0].OutputLen != 10 || len(reqs[0].Prompt) != 1 {
		t.Errorf("row 1: %+v", reqs[0])
	}
	if reqs[0].Prompt[0].ID == reqs[1].Prompt[0].ID {
		t.Error("Azure rows carry no prefix information: prompts must not share content")
	}
	// Speedup and window (ms from the first row).
	reqs, err = azure(t, text, TraceSpec{FixedScheduleSpeedup: 4, FixedScheduleStartOffset: 50, FixedScheduleEndOffset: 60020})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].Arrival != 500*time.Microsecond || reqs[1].Arrival != 117510*time.Microsecond {
		t.Errorf("window [50, 60020] ms at speedup 4: %v", reqs)
	}
}

func TestAzureColumnsAnyOrder(t *testing.T) {
	reqs, err := azure(t, "GeneratedTokens,TIMESTAMP,ContextTokens\r\n7,2024-05-10 00:00:00,100\r\n", TraceSpec{})
	if err != nil || len(reqs) != 1 || reqs[0].InputLen != 100 || reqs[0].OutputLen != 7 {
		t.Fatalf("%v %v", reqs, err)
	}
}

func TestAzureErrors(t *testing.T) {
	row := "2023-11-16 18:17:03.9799600,4808,10\n"
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "azure.csv: empty file"},
		{"unknown column", "TIMESTAMP,ContextTokens,GeneratedTokens,Model\n", `azure.csv:1: TIMESTAMP,ContextTokens,GeneratedTokens,Model: unknown column "Model"`},
		{"missing column", "TIMESTAMP,ContextTokens\n", "azure.csv:1: TIMESTAMP,ContextTokens: missing column GeneratedTokens"},
		{"negative tokens", azureHead + row + "2023-11-16 18:17:04,-5,10\n", "azure.csv:3: ContextTokens: -5: must be an integer in [1, 268435456]"},
		{"zero output", azureHead + row + "2023-11-16 18:17:04,5,0\n", "azure.csv:3: GeneratedTokens: 0: must be an integer in [1, 268435456]"},
		{"not a number", azureHead + row + "2023-11-16 18:17:04,5x,3\n", "azure.csv:3: ContextTokens: 5x: must be an integer"},
		{"bad time", azureHead + row + "2023-11-31 18:17:04,5,3\n", "azure.csv:3: TIMESTAMP: 2023-11-31 18:17:04: must be a time like 2023-11-16 18:17:03.9799600"},
		{"backwards", azureHead + row + "2023-11-16 18:17:03.5,5,3\n", "azure.csv:3: TIMESTAMP: 2023-11-16 18:17:03.5: goes back in time from the previous row"},
		{"field count", azureHead + row + "2023-11-16 18:17:04,5\n", "azure.csv:3: 2023-11-16 18:17:04,5: 2 fields, the header has 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := azure(t, c.text, TraceSpec{})
			wantBadInput(t, err, c.want)
		})
	}
	// Lenient skips impossible values.
	src, err := NewAzure(strings.NewReader(azureHead+row+"2023-11-16 18:17:03,5,3\n2023-11-16 18:17:04,0,3\n"+row), "a", TraceSpec{Lenient: true})
	reqs := mustDrain(t, src, err)
	if len(reqs) != 2 || src.(*azureSource).Skipped() != 2 {
		t.Errorf("%d requests, %d skipped; want 2, 2", len(reqs), src.(*azureSource).Skipped())
	}
}

func checkAzureFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	rows := -1 // the header
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rows++
	}
	f.Close()
	src, err := Open(TraceSpec{DatasetName: DatasetAzure, DatasetPath: path})
	reqs := mustDrain(t, src, err)
	if len(reqs) != rows {
		t.Fatalf("%d requests from %d rows", len(reqs), rows)
	}
	if reqs[0].Arrival != 0 {
		t.Errorf("first arrival %v, want 0", reqs[0].Arrival)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Arrival < reqs[i-1].Arrival {
			t.Fatalf("row %d goes back in time", i+2)
		}
	}
	t.Logf("%s: %d requests over %v", path, len(reqs), reqs[len(reqs)-1].Arrival)
}

func TestAzureSamples(t *testing.T) {
	for _, p := range []string{"testdata/azure_code_head200.csv", "testdata/azure_conv_head200.csv"} {
		t.Run(p, func(t *testing.T) { checkAzureFile(t, p) })
	}
	// Rows 1–2 of the code trace by hand: 18:17:03.9799600 then
	// 18:17:04.0319600, 4808/10 and 3180/8 tokens.
	src, err := Open(TraceSpec{DatasetName: DatasetAzure, DatasetPath: "testdata/azure_code_head200.csv", NumPrompts: 2})
	reqs := mustDrain(t, src, err)
	if reqs[1].Arrival != 52*time.Millisecond || reqs[1].InputLen != 3180 || reqs[1].OutputLen != 8 {
		t.Errorf("row 2: %+v", reqs[1])
	}
}

func TestAzureRealTraces(t *testing.T) {
	for _, p := range []string{"testdata/azure_code_head200.csv", "testdata/azure_conv_head200.csv"} {
		t.Run(p, func(t *testing.T) { checkAzureFile(t, p) })
	}
}
