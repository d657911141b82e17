package lmbench

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParse(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error {
		file, err := Parse("f.csv", data)
		if err == nil && file.Scenario == ShareGPT {
			AlignShareGPT(file.Rows)
		}
		return err
	},
		"prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n689,275,0.09,8.8,1746734126.94,1746734135.87\n543,332,0.1,10.5,1746734127.19,1746734137.86\n",
		"prompt_tokens,generation_tokens,ttft,generation_time,user_id,question_id,launch_time,finish_time\n76.0,20.0,0.04,0.54,1203,1,1746687514.15,1746687514.74\n125.0,20.0,0.05,0.55,1203,2,1746687530.5,1746687531.1\n")
}
