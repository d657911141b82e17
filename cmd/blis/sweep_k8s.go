package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"blis/k8sjob"
	sweepgrid "blis/sweep/grid"
)

// newSweepK8sCmd is `blis sweep k8s GRID.yaml`: it prints the manifests that
// run the grid as a Kubernetes Indexed Job, one shard per pod, for
// `kubectl apply -f -`. It checks the grid as `blis sweep` does, then
// embeds it (and its scenario file) and takes its name.
func newSweepK8sCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		opt     k8sjob.Options
		ttl     time.Duration
		copyPod bool
	)
	cmd := &cobra.Command{
		Use:   "k8s GRID.yaml",
		Short: "Print a Kubernetes Indexed Job that runs the grid's shards on a cluster",
		Long: `Print the manifests that run a sweep on a Kubernetes cluster: a ConfigMap
holding the grid, and an Indexed Job with one completion per shard. Pod I runs
  blis sweep /grid/GRID.yaml --out /results/NAME/shard-I --shard-index I --shard-count N -q
and writes its shard store to the results volume (a ReadWriteMany claim, --pvc).
Bad input (exit 2) fails a shard at once; other failures retry --retries times.
--copy-pod prints instead a pod that mounts the claim, for kubectl cp of the
stores; merge them with blis sweep merge.`,
		Example: `  blis sweep k8s grid.yaml --image registry.example.com/blis:v1 --shards 16 --pvc sweeps > job.yaml
  kubectl apply -f job.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("sweep k8s takes one grid file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			// The whole grid is checked here, as blis sweep checks it, so
			// that a bad key fails now rather than in every pod; its
			// scenario file, read beside it, goes into the ConfigMap.
			g, err := sweepgrid.ReadFile(file)
			if err != nil {
				return err
			}
			grid, err := k8sjob.ParseGrid(file, g.Text)
			if err != nil {
				return err
			}
			opt.GridFile, opt.Grid, opt.Scenario = file, g.Text, g.ScenarioText
			if ttl < 0 {
				return &usageError{fmt.Errorf("--ttl %s: allowed: 0 or more (how long a finished Job and its pods are kept)", ttl)}
			}
			opt.TTLSeconds = int(ttl / time.Second)
			if copyPod {
				return k8sjob.RenderCopyPod(stdout, opt, grid)
			}
			return k8sjob.Render(stdout, opt, grid)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	fs := cmd.Flags()
	fs.StringVar(&opt.Image, "image", k8sjob.DefaultImage, "container image with blis (build it with the repository's Dockerfile and push it where the cluster pulls from)")
	fs.IntVar(&opt.Shards, "shards", 8, "shards of the grid: the Job's completions, one pod each")
	fs.IntVar(&opt.Parallelism, "parallelism", 0, "pods running at once (0 = min(shards, 8))")
	fs.StringVar(&opt.CPU, "cpu", k8sjob.DefaultCPU, "CPU request and limit per pod (a Kubernetes quantity; GOMAXPROCS follows the limit)")
	fs.StringVar(&opt.Memory, "memory", k8sjob.DefaultMemory, "memory request and limit per pod (a Kubernetes quantity)")
	fs.StringVar(&opt.PVC, "pvc", "", "ReadWriteMany PersistentVolumeClaim the shard stores are written to")
	fs.StringVar(&opt.PVCSize, "pvc-size", "", "also render the claim, with this size (e.g. 20Gi); omit when the claim exists")
	fs.StringVar(&opt.StorageClass, "storage-class", "", "storage class of the rendered claim (one that offers ReadWriteMany; default: the cluster's)")
	fs.StringVar(&opt.Volume, "results-volume", "", "pvc (default when --pvc is given) or emptyDir (a dry run: the stores vanish with the pods)")
	fs.StringVar(&opt.Namespace, "namespace", "", "namespace of every object (default: kubectl's current one)")
	fs.StringVar(&opt.Name, "name", "", "Job name (default: the grid's name, made a DNS-1123 label)")
	fs.IntVar(&opt.Retries, "retries", k8sjob.DefaultRetries, "retries per shard after a failure other than bad input (the Job's backoffLimitPerIndex)")
	fs.DurationVar(&ttl, "ttl", k8sjob.DefaultTTL*time.Second, "keep the finished Job and its pods this long (ttlSecondsAfterFinished); the stores stay on the claim")
	fs.BoolVar(&copyPod, "copy-pod", false, "print instead a pod that mounts the claim read-only, to kubectl cp the shard stores off it")
	fs.StringVar(&opt.CopyImage, "copy-image", k8sjob.DefaultCopyImage, "image of the --copy-pod (it needs tar for kubectl cp)")
	return cmd
}
