package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.tether.health.HealthServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The examples in {@code deploy/} agree with the CLI: their worker arguments parse, their probes
 * name the health server's paths on the worker's health port, and their stop timeouts outlast the
 * worker's shutdown. The systemd unit also passes {@code systemd-analyze verify} where that tool
 * exists.
 */
class DeployExamplesTest {
  private static final Path REPO =
      Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath().getParent();
  private static final Path UNIT = REPO.resolve("deploy/systemd/tether-worker.service");
  private static final Path DEPLOYMENT = REPO.resolve("deploy/kubernetes/tether-worker.yaml");
  /** The comment that marks each stop timeout to revisit when the worker's shutdown changes. */
  private static final String BUDGET_MARK = "shutdown-budget:";

  @TempDir Path dir;

  /** The {@code worker} command as the CLI parses {@code args}. */
  private static WorkerCommand worker(List<String> args) {
    CommandLine.ParseResult parsed = TetherCli.commandLine().parseArgs(args.toArray(new String[0]));
    assertThat(parsed.hasSubcommand()).as("a subcommand in %s", args).isTrue();
    assertThat(parsed.subcommand().commandSpec().name()).isEqualTo("worker");
    return (WorkerCommand) parsed.subcommand().commandSpec().userObject();
  }

  /** How long the worker may take to stop after SIGTERM before its exit status says 3. */
  private static Duration shutdownBound(WorkerCommand w) {
    return w.drainTimeout.plus(w.killGrace).plus(WorkerCommand.SHUTDOWN_MARGIN);
  }

  /** The unit's settings: section, then key, then its values in order. */
  private static Map<String, Map<String, List<String>>> parseUnit(List<String> lines) {
    Map<String, Map<String, List<String>>> unit = new LinkedHashMap<>();
    String section = null;
    for (String raw : lines) {
      String line = raw.strip();
      if (line.isEmpty() || line.startsWith("#") || line.startsWith(";")) {
        continue;
      }
      if (line.startsWith("[")) {
        section = line.substring(1, line.indexOf(']'));
        unit.putIfAbsent(section, new LinkedHashMap<>());
        continue;
      }
      int eq = line.indexOf('=');
      assertThat(eq).as("a key=value line: %s", line).isPositive();
      assertThat(section).as("a section before %s", line).isNotNull();
      unit.get(section).computeIfAbsent(line.substring(0, eq).strip(), k -> new ArrayList<>())
          .add(line.substring(eq + 1).strip());
    }
    return unit;
  }

  /** The line before (or the line holding) {@code key} carries the budget mark. */
  private static void assertMarked(List<String> lines, String key) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).strip().startsWith(key)) {
        boolean marked = lines.get(i).contains(BUDGET_MARK) || (i > 0 && lines.get(i - 1).contains(BUDGET_MARK));
        assertThat(marked).as("'%s' marked with '%s'", key, BUDGET_MARK).isTrue();
        return;
      }
    }
    throw new AssertionError(key + " not found");
  }

  @Test
  void systemdUnitRunsTheArchiveLauncherAndOutlastsTheWorkersShutdown() throws IOException {
    List<String> lines = Files.readAllLines(UNIT, StandardCharsets.UTF_8);
    Map<String, List<String>> service = parseUnit(lines).get("Service");
    assertThat(service).as("[Service]").isNotNull();

    List<String> exec = Arrays.asList(service.get("ExecStart").get(0).split("\\s+"));
    assertThat(exec.get(0)).isEqualTo("/opt/tether/bin/tether");
    WorkerCommand w = worker(exec.subList(1, exec.size()));
    assertThat(exec).contains("--db-password-file");
    assertThat(String.join(" ", exec)).doesNotContainIgnoringCase("password=");

    // SIGTERM to the worker alone: it stops its commands itself and hands their items back
    assertThat(service.get("KillMode")).containsExactly("mixed");
    assertThat(service.getOrDefault("KillSignal", List.of("SIGTERM"))).containsExactly("SIGTERM");
    assertThat(w.drainTimeout).as("--drain-timeout").isPositive();
    long timeoutStop = Long.parseLong(service.get("TimeoutStopSec").get(0));
    assertThat(Duration.ofSeconds(timeoutStop)).isGreaterThan(shutdownBound(w));
    assertMarked(lines, "TimeoutStopSec=");
    // a clean stop exits 0: no 143 to declare a success
    assertThat(service).doesNotContainKey("SuccessExitStatus");
    assertThat(service.get("Restart")).containsExactly("on-failure");
    assertThat(service.get("RestartPreventExitStatus").get(0).split("\\s+")).contains("2");
  }

  @Test
  void systemdUnitPassesSystemdAnalyzeVerify() throws Exception {
    Path tool = Path.of("/usr/bin/systemd-analyze");
    if (!Files.isExecutable(tool)) {
      System.out.println("systemd-analyze not installed: the unit's settings are checked by the other test only");
      return;
    }
    // verify checks that ExecStart's program exists: point it at a stand-in of the launcher
    Path launcher = dir.resolve("opt/tether/bin/tether");
    Files.createDirectories(launcher.getParent());
    Files.writeString(launcher, "#!/bin/sh\nexit 0\n");
    Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path copy = dir.resolve(UNIT.getFileName());
    Files.writeString(copy, Files.readString(UNIT).replace("/opt/tether/", dir.resolve("opt/tether") + "/"));
    Path out = dir.resolve("verify.txt");
    Process p = new ProcessBuilder(tool.toString(), "verify", "--man=no", copy.toString())
        .redirectErrorStream(true).redirectOutput(out.toFile()).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String said = Files.readString(out);
    assertThat(p.exitValue()).as("systemd-analyze verify: %s", said).isZero();
    assertThat(said).as("systemd-analyze verify warnings").isBlank();
  }

  @Test
  void kubernetesDeploymentProbesTheWorkersHealthPortAndOutlastsItsShutdown() throws IOException {
    JsonNode d = new ObjectMapper(new YAMLFactory()).readTree(DEPLOYMENT.toFile());
    assertThat(d.path("apiVersion").asText()).isEqualTo("apps/v1");
    assertThat(d.path("kind").asText()).isEqualTo("Deployment");
    JsonNode pod = d.path("spec").path("template").path("spec");
    assertThat(d.path("spec").path("selector").path("matchLabels"))
        .isEqualTo(d.path("spec").path("template").path("metadata").path("labels"));
    JsonNode c = pod.path("containers").get(0);
    assertThat(c.path("command").get(0).asText()).isEqualTo("/opt/tether/bin/tether");

    List<String> args = new ArrayList<>();
    c.path("args").forEach(a -> args.add(a.asText()));
    WorkerCommand w = worker(args);
    assertThat(w.healthPort).as("--health-port").isNotNull();
    // the kubelet probes the pod's IP, so the health server must not listen on loopback only
    assertThat(w.host).as("--host").isEqualTo("0.0.0.0");

    Map<String, Integer> ports = new LinkedHashMap<>();
    c.path("ports").forEach(p -> ports.put(p.path("name").asText(), p.path("containerPort").asInt()));
    assertThat(ports).containsValue(w.healthPort);
    Map<String, String> probes = Map.of(
        "livenessProbe", HealthServer.LIVE_PATH, "readinessProbe", HealthServer.READY_PATH);
    probes.forEach((probe, path) -> {
      JsonNode get = c.path(probe).path("httpGet");
      assertThat(get.path("path").asText()).as(probe + " path").isEqualTo(path);
      JsonNode port = get.path("port");
      int number = port.isInt() ? port.asInt() : ports.getOrDefault(port.asText(), -1);
      assertThat(number).as(probe + " port").isEqualTo(w.healthPort);
    });

    // a rolling update lets running commands finish before they are handed back
    assertThat(w.drainTimeout).as("--drain-timeout").isPositive();
    long grace = pod.path("terminationGracePeriodSeconds").asLong();
    assertThat(Duration.ofSeconds(grace)).isGreaterThan(shutdownBound(w));
    assertMarked(Files.readAllLines(DEPLOYMENT), "terminationGracePeriodSeconds:");

    // a read-only root file system leaves /tmp (java.io.tmpdir: the commands' launcher) writable
    if (c.path("securityContext").path("readOnlyRootFilesystem").asBoolean()) {
      List<String> mounted = new ArrayList<>();
      c.path("volumeMounts").forEach(m -> mounted.add(m.path("mountPath").asText()));
      assertThat(mounted).contains("/tmp");
    }

    // the password comes from a Secret file, never from the manifest
    assertThat(args).anyMatch(a -> a.startsWith("--db-password-file"));
    c.path("env").forEach(e -> assertThat(e.path("value").asText()).doesNotContainIgnoringCase("password="));
  }
}
