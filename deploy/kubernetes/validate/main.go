// Command validate checks the Kubernetes manifests of deploy/kubernetes offline, as a cluster's API
// server would read them: each document strictly decoded into its typed Kubernetes object (an
// unknown or misspelt field is an error), then the rules that tie them together (probes on the
// API's health routes, requests on every container, selectors and scale targets that name a
// Deployment of the file, config and secret references that exist). Temporal's chart values are
// checked for what this service relies on. Run by npm test (test/unit/deploy.test.ts):
//
//	go run ./deploy/kubernetes/validate deploy/kubernetes
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

type manifests struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	autoscalers []autoscalingv2.HorizontalPodAutoscaler
	budgets     []policyv1.PodDisruptionBudget
	jobs        []batchv1.Job
	configMaps  map[string]bool
	secrets     map[string]bool
	problems    []string
}

func (m *manifests) problem(format string, args ...any) {
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

// strict decodes JSON into out, refusing fields the type does not have.
func strict(document []byte, out any) error {
	decoder := json.NewDecoder(bytes.NewReader(document))
	decoder.DisallowUnknownFields()
	return decoder.Decode(out)
}

func (m *manifests) read(path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		m.problem("%s: %v", path, err)
		return
	}
	for index, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		document, err := yaml.YAMLToJSON([]byte(part))
		if err != nil {
			m.problem("%s document %d: %v", path, index+1, err)
			continue
		}
		if string(document) == "null" {
			continue
		}
		var head struct{ APIVersion, Kind string }
		if err := json.Unmarshal(document, &head); err != nil {
			m.problem("%s document %d: %v", path, index+1, err)
			continue
		}
		if err := m.decode(head.APIVersion+" "+head.Kind, document); err != nil {
			m.problem("%s document %d (%s): %v", path, index+1, head.Kind, err)
		}
	}
}

func (m *manifests) decode(kind string, document []byte) error {
	switch kind {
	case "apps/v1 Deployment":
		var object appsv1.Deployment
		err := strict(document, &object)
		m.deployments = append(m.deployments, object)
		return err
	case "v1 Service":
		var object corev1.Service
		err := strict(document, &object)
		m.services = append(m.services, object)
		return err
	case "autoscaling/v2 HorizontalPodAutoscaler":
		var object autoscalingv2.HorizontalPodAutoscaler
		err := strict(document, &object)
		m.autoscalers = append(m.autoscalers, object)
		return err
	case "policy/v1 PodDisruptionBudget":
		var object policyv1.PodDisruptionBudget
		err := strict(document, &object)
		m.budgets = append(m.budgets, object)
		return err
	case "batch/v1 Job":
		var object batchv1.Job
		err := strict(document, &object)
		m.jobs = append(m.jobs, object)
		return err
	case "v1 ConfigMap":
		var object corev1.ConfigMap
		err := strict(document, &object)
		m.configMaps[object.Name] = true
		return err
	case "v1 Secret":
		var object corev1.Secret
		err := strict(document, &object)
		m.secrets[object.Name] = true
		return err
	}
	return fmt.Errorf("kind %q is not one these manifests use", kind)
}

// selects reports whether every label of selector is on labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for key, value := range selector {
		if labels[key] != value {
			return false
		}
	}
	return true
}

func (m *manifests) checkContainers(owner string, spec corev1.PodSpec) {
	for _, container := range spec.Containers {
		if container.Resources.Requests.Cpu().IsZero() || container.Resources.Requests.Memory().IsZero() {
			m.problem("%s: container %s requests no CPU or memory", owner, container.Name)
		}
		if container.Resources.Limits.Memory().IsZero() {
			m.problem("%s: container %s has no memory limit", owner, container.Name)
		}
		for _, source := range container.EnvFrom {
			if source.ConfigMapRef != nil && !m.configMaps[source.ConfigMapRef.Name] {
				m.problem("%s: ConfigMap %s is not in the manifests", owner, source.ConfigMapRef.Name)
			}
			if source.SecretRef != nil && !m.secrets[source.SecretRef.Name] {
				m.problem("%s: Secret %s is not in the manifests", owner, source.SecretRef.Name)
			}
		}
	}
}

func (m *manifests) checkApi(deployment appsv1.Deployment) {
	for _, container := range deployment.Spec.Template.Spec.Containers {
		ready, alive := container.ReadinessProbe, container.LivenessProbe
		if ready == nil || ready.HTTPGet == nil || ready.HTTPGet.Path != "/readyz" {
			m.problem("%s: the API's readiness probe must GET /readyz", deployment.Name)
		}
		if alive == nil || alive.HTTPGet == nil || alive.HTTPGet.Path != "/livez" {
			m.problem("%s: the API's liveness probe must GET /livez (never a dependency: an outage must not restart it)", deployment.Name)
		}
	}
}

func (m *manifests) check() {
	deployments := map[string]appsv1.Deployment{}
	for _, deployment := range m.deployments {
		deployments[deployment.Name] = deployment
		if !selects(deployment.Spec.Selector.MatchLabels, deployment.Spec.Template.Labels) {
			m.problem("%s: its selector does not select its own pods", deployment.Name)
		}
		m.checkContainers(deployment.Name, deployment.Spec.Template.Spec)
		if deployment.Spec.Template.Labels["app.kubernetes.io/component"] == "api" {
			m.checkApi(deployment)
		}
	}
	for _, job := range m.jobs {
		m.checkContainers(job.Name, job.Spec.Template.Spec)
	}
	selectsADeployment := func(selector map[string]string) bool {
		for _, deployment := range deployments {
			if selects(selector, deployment.Spec.Template.Labels) {
				return true
			}
		}
		return false
	}
	for _, service := range m.services {
		if !selectsADeployment(service.Spec.Selector) {
			m.problem("Service %s selects no Deployment's pods", service.Name)
		}
	}
	for _, budget := range m.budgets {
		if budget.Spec.Selector == nil || !selectsADeployment(budget.Spec.Selector.MatchLabels) {
			m.problem("PodDisruptionBudget %s selects no Deployment's pods", budget.Name)
		}
	}
	for _, autoscaler := range m.autoscalers {
		target := autoscaler.Spec.ScaleTargetRef
		if _, found := deployments[target.Name]; target.Kind != "Deployment" || !found {
			m.problem("HorizontalPodAutoscaler %s scales %s %s, not a Deployment of the manifests", autoscaler.Name, target.Kind, target.Name)
		}
		if autoscaler.Spec.MinReplicas == nil || *autoscaler.Spec.MinReplicas < 2 {
			m.problem("HorizontalPodAutoscaler %s: at least 2 replicas, so one can be drained", autoscaler.Name)
		}
	}
}

// checkTemporalValues reads the chart values this service relies on: SQL persistence on PostgreSQL,
// a power-of-two shard count, eager activity dispatch.
func (m *manifests) checkTemporalValues(path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		m.problem("%s: %v", path, err)
		return
	}
	var values struct {
		Server struct {
			Config struct {
				NumHistoryShards int                        `json:"numHistoryShards"`
				Persistence      map[string]json.RawMessage `json:"persistence"`
			} `json:"config"`
			DynamicConfig map[string][]struct {
				Value any `json:"value"`
			} `json:"dynamicConfig"`
		} `json:"server"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		m.problem("%s: %v", path, err)
		return
	}
	shards := values.Server.Config.NumHistoryShards
	if shards < 4 || shards&(shards-1) != 0 {
		m.problem("%s: numHistoryShards %d is not a power of two of at least 4", path, shards)
	}
	for _, store := range []string{"default", "visibility"} {
		var persistence struct {
			Driver string `json:"driver"`
			SQL    struct {
				Driver string `json:"driver"`
			} `json:"sql"`
		}
		if err := json.Unmarshal(values.Server.Config.Persistence[store], &persistence); err != nil || persistence.Driver != "sql" || persistence.SQL.Driver != "postgres12" {
			m.problem("%s: the %s store must be SQL on PostgreSQL (driver sql, sql.driver postgres12)", path, store)
		}
	}
	if eager := values.Server.DynamicConfig["system.enableActivityEagerExecution"]; len(eager) != 1 || eager[0].Value != true {
		m.problem("%s: system.enableActivityEagerExecution must be on, as the compose file's dynamic config has it", path)
	}
}

func main() {
	folder := "deploy/kubernetes"
	if len(os.Args) > 1 {
		folder = os.Args[1]
	}
	m := &manifests{configMaps: map[string]bool{}, secrets: map[string]bool{}}
	m.read(filepath.Join(folder, "collections.yaml"))
	m.check()
	m.checkTemporalValues(filepath.Join(folder, "temporal-values.yaml"))
	for _, problem := range m.problems {
		fmt.Println(problem)
	}
	if len(m.problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("%d deployments, %d services, %d autoscalers, %d disruption budgets, %d jobs: valid\n",
		len(m.deployments), len(m.services), len(m.autoscalers), len(m.budgets), len(m.jobs))
}
