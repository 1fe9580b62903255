package dev.tether.micrometer.testing;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.propagation.Propagator;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.util.List;

/**
 * Test support (in tether-micrometer's test-jar, used by the starter's and the Boot sample's
 * tests too): a propagator for Micrometer's {@link SimpleTracer} that carries one header,
 * {@value #FIELD}, as {@code traceId-spanId}, so that a trace can cross the store between two
 * tracers as a real propagator would carry it.
 */
public final class OneHeaderPropagator implements Propagator {
  /** The header's name. */
  public static final String FIELD = "x-test-trace";

  private final SimpleTracer tracer;

  /** A propagator that extracts into spans of {@code tracer}. */
  public OneHeaderPropagator(SimpleTracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public List<String> fields() {
    return List.of(FIELD);
  }

  @Override
  public <C> void inject(TraceContext context, C carrier, Setter<C> setter) {
    setter.set(carrier, FIELD, context.traceId() + "-" + context.spanId());
  }

  @Override
  public <C> Span.Builder extract(C carrier, Getter<C> getter) {
    String value = getter.get(carrier, FIELD);
    if (value == null) {
      return tracer.spanBuilder();
    }
    int dash = value.indexOf('-');
    return tracer.spanBuilder().setParent(tracer.traceContextBuilder()
        .traceId(value.substring(0, dash)).spanId(value.substring(dash + 1)).sampled(true).build());
  }
}
