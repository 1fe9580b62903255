package dev.tether.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.ItemQuery;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.micrometer.testing.OneHeaderPropagator;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.propagation.Propagator;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;

/**
 * The example application end to end, on each engine (a subclass per engine): a rolled-back
 * request sends nothing, a beating handler keeps its lease past the visibility timeout, and the
 * Actuator shows Tether's health.
 */
@SpringBootTest(
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      // short leases, long work: only beats can keep a report with its first worker
      "tether.handler-defaults.visibility=3s",
      "tether.handler-defaults.extend-every=300ms",
      "tether.handler-defaults.extension=2s",
      "tether.handler-defaults.concurrency=2",
      "tether.worker.wait-time=500ms",
      "tether.worker.watchdog.enabled=false",
      "reports.page-time=300ms",
      "tether.metrics.queue-depth=true",
      "tether.metrics.queue-depth-refresh=1s"
    })
@Import(ReportsApplicationCompatibilityTest.Tracing.class)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
abstract class ReportsApplicationCompatibilityTest {
  static final Duration VISIBILITY = Duration.ofSeconds(3);

  @Value("${local.server.port}")
  int port;

  @Autowired TetherStore store;

  @Autowired JdbcTemplate jdbc;

  final HttpClient http = HttpClient.newHttpClient();

  HttpResponse<String> post(String path, String json) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  List<WorkItem> reportItems() {
    return new QueueMonitor(store).items(ItemQuery.all().withQueue("reports").withLimit(1000));
  }

  @Test
  void aRolledBackRequestSendsNothingAndACommittedOneIsRendered() throws Exception {
    int itemsBefore = reportItems().size();
    int rowsBefore = jdbc.queryForObject("SELECT COUNT(*) FROM reports", Integer.class);
    HttpResponse<String> failed = post("/reports?failAfterSend=true", "{\"title\":\"never\",\"pages\":1}");
    assertThat(failed.statusCode()).as(failed.body()).isEqualTo(409);
    long sentThenRolledBack = Long.parseLong(failed.body().replaceAll(".*\"rolledBackMessage\":\"(\\d+)\".*", "$1"));
    assertThat(new QueueMonitor(store).item(sentThenRolledBack)).as("the message the request sent").isEmpty();
    assertThat(reportItems()).hasSize(itemsBefore);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM reports", Integer.class)).isEqualTo(rowsBefore);

    HttpResponse<String> ok = post("/reports", "{\"title\":\"quarterly\",\"pages\":2}");
    assertThat(ok.statusCode()).isEqualTo(202);
    long messageId = Long.parseLong(ok.body().replaceAll(".*\"message\":\"(\\d+)\".*", "$1"));
    await().atMost(Duration.ofSeconds(60)).until(() -> status(messageId) == WorkStatus.COMPLETED);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM reports WHERE title = 'quarterly' AND status = 'rendered'",
        Integer.class)).isEqualTo(1);
  }

  @Test
  void aBeatingHandlerKeepsItsLeasePastTheVisibilityTimeout() throws Exception {
    // 12 pages of 300 ms: about 3.6 s of work against a 3 s visibility timeout, and a second
    // loop ready to take the report over the moment its lease ran out.
    HttpResponse<String> ok = post("/reports", "{\"title\":\"long\",\"pages\":12}");
    assertThat(ok.statusCode()).isEqualTo(202);
    long id = Long.parseLong(ok.body().replaceAll(".*\"message\":\"(\\d+)\".*", "$1"));
    AtomicBoolean extended = new AtomicBoolean();
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      WorkItem item = new QueueMonitor(store).item(id).orElseThrow();
      if (item.leaseAcquiredAt() != null && item.leaseExpiresAt() != null
          && item.leaseExpiresAt().isAfter(item.leaseAcquiredAt().plus(VISIBILITY))) {
        extended.set(true);
      }
      return item.status() == WorkStatus.COMPLETED;
    });
    WorkItem done = new QueueMonitor(store).item(id).orElseThrow();
    assertThat(extended).as("a beat pushed the lease past acquisition + visibility").isTrue();
    assertThat(done.deliveryCount()).as("never taken over by the other loop").isEqualTo(1);
    assertThat(Duration.between(done.startedAt(), done.completedAt())).isGreaterThan(VISIBILITY);
  }

  @Test
  void theActuatorShowsTethersHealthInTheProbes() throws Exception {
    await().atMost(Duration.ofSeconds(30)).until(() -> get("/actuator/health/readiness").statusCode() == 200);
    HttpResponse<String> readiness = get("/actuator/health/readiness");
    assertThat(readiness.body()).contains("\"tetherReadiness\"").contains("\"readinessState\"");
    HttpResponse<String> liveness = get("/actuator/health/liveness");
    assertThat(liveness.statusCode()).isEqualTo(200);
    assertThat(liveness.body()).contains("\"tetherLiveness\"").contains("reports-1");
  }

  @Test
  void prometheusShowsTethersMeters() throws Exception {
    HttpResponse<String> ok = post("/reports", "{\"title\":\"metered\",\"pages\":1}");
    long id = Long.parseLong(ok.body().replaceAll(".*\"message\":\"(\\d+)\".*", "$1"));
    await().atMost(Duration.ofSeconds(60)).until(() -> status(id) == WorkStatus.COMPLETED);
    await().atMost(Duration.ofSeconds(30)).until(() ->
        get("/actuator/prometheus").body().contains("tether_handler_duration_seconds_count{outcome=\"success\""));
    String text = get("/actuator/prometheus").body();
    assertThat(text)
        .contains("tether_lease_extensions_total{queue=\"reports\"")
        .contains("tether_loop_heartbeat_age_seconds{loop=\"reports-1\"}")
        .contains("tether_items_in_flight{queue=\"reports\"}")
        .contains("tether_sweep_scans_total")
        .contains("tether_queue_items{queue=\"reports\",status=\"completed\"}");
  }

  @Test
  void aTraceLinksTheRequestsSendToItsProcessing() throws Exception {
    HttpResponse<String> ok = post("/reports", "{\"title\":\"traced\",\"pages\":1}");
    String id = ok.body().replaceAll(".*\"message\":\"(\\d+)\".*", "$1");
    await().atMost(Duration.ofSeconds(60)).until(() -> status(Long.parseLong(id)) == WorkStatus.COMPLETED);
    await().atMost(Duration.ofSeconds(10)).until(() -> processSpan(id) != null);
    SimpleSpan process = processSpan(id);
    SimpleSpan enqueue = tracer.getSpans().stream()
        .filter(s -> "enqueue reports".equals(s.getName()) && id.equals(s.getTags().get("tether.message.id")))
        .findFirst().orElseThrow();
    assertThat(process.getTraceId()).isEqualTo(enqueue.getTraceId());
    assertThat(process.getParentId()).isEqualTo(enqueue.getSpanId());
    SimpleSpan parentOfEnqueue = tracer.getSpans().stream()
        .filter(s -> s.getSpanId().equals(enqueue.getParentId())).findFirst().orElseThrow();
    assertThat(parentOfEnqueue.getTags()).as("the HTTP request's span").containsEntry("uri", "/reports");
  }

  @Autowired SimpleTracer tracer;

  SimpleSpan processSpan(String id) {
    return tracer.getSpans().stream()
        .filter(s -> "process reports".equals(s.getName()) && id.equals(s.getTags().get("tether.message.id")))
        .findFirst().orElse(null);
  }

  /** A tracer for the test: spans kept in memory, trace context propagated as one header. */
  @TestConfiguration(proxyBeanMethods = false)
  static class Tracing {
    @Bean
    SimpleTracer simpleTracer() {
      return new SimpleTracer();
    }

    @Bean
    ObservationHandler<Observation.Context> tracingHandlers(SimpleTracer tracer) {
      Propagator propagator = new OneHeaderPropagator(tracer);
      return new ObservationHandler.FirstMatchingCompositeObservationHandler(
          new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
          new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
          new DefaultTracingObservationHandler(tracer));
    }
  }

  WorkStatus status(long id) {
    return new QueueMonitor(store).item(id).map(WorkItem::status).orElseThrow();
  }
}
