package dev.tether.health;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP endpoints for Kubernetes probes, on the JDK's built-in {@link HttpServer}.
 *
 * <ul>
 *   <li>{@code GET /health/live}: always {@code 200 {"status":"healthy"}} while the process
 *       answers (liveness probe);
 *   <li>{@code GET /health/ready}: {@code 200 {"status":"healthy"}} when the readiness check
 *       returns true, otherwise {@code 503 {"status":"unhealthy"}}; a check that throws counts as
 *       not ready and is logged at ERROR (readiness probe);
 *   <li>{@code HEAD} on both: the same status and headers, no body; any other method: {@code 405}
 *       with {@code Allow: GET, HEAD};
 *   <li>any other path: {@code 404}, unless mounted with {@link Builder#route(String,
 *       HttpHandler)} (the CLI mounts a dashboard and {@code /metrics} there). The two health paths
 *       match exactly and cannot be overridden.
 * </ul>
 *
 * Health responses are {@code application/json} with {@code Cache-Control: no-store}.
 *
 * <h2>Host</h2>
 *
 * The default host is {@value #DEFAULT_HOST}, every interface, because the kubelet probes the pod
 * IP from outside the container; bind {@code 127.0.0.1} when only local processes should reach it.
 *
 * <h2>Slow and malformed clients</h2>
 *
 * The JDK server reads each request's line and headers on an executor thread, in blocking mode (its
 * dispatcher thread only waits for the first byte). The server therefore runs exchanges on a
 * bounded pool of small-stack daemon threads named {@code tether-health-N} that never queues (at
 * most {@link Builder#maxConcurrentRequests(int)} at once, default {@value
 * #DEFAULT_MAX_CONCURRENT_REQUESTS}), and cuts off any request not fully read within {@link
 * Builder#requestReadTimeout(Duration)}: its connection is closed and its thread freed. When every
 * thread is busy, a new connection cuts off the request that has been reading the longest and takes
 * its thread, so slow clients, however many, cannot lock a probe out (they can only evict each
 * other); a connection is closed at once only when every thread runs a handler. So a slowloris of
 * hundreds of connections trickling bytes does not delay {@code /health/live} (the test and its
 * figures are in {@code docs/RELIABILITY.md}). Malformed request lines get the JDK server's 400
 * and their connection is closed. Mounted handlers run without a time limit once the request is
 * read.
 *
 * <p>No {@code sun.net.httpserver.*} system property is read or set by this class: those are
 * JVM-wide, read once when the JDK server class is first used, and would change every other
 * {@code HttpServer} in the process. What they do, if the user sets them: {@code maxReqTime} and
 * {@code maxRspTime} (whole seconds, off by default) close connections whose request or response
 * takes longer, checked by a timer every second; {@code idleInterval} (30 s) closes keep-alive
 * connections, and connections that never sent a byte, after that much idleness (such connections
 * hold no thread, only a socket in the dispatcher's selector); {@code maxIdleConnections} (200) and
 * {@code maxConnections} (unlimited) bound connections; {@code maxReqHeaders} (200) bounds the
 * header count of one request.
 *
 * <h2>Lifecycle and threads</h2>
 *
 * {@link #start()} binds and serves; {@link #stop()} closes every connection, frees the port and
 * ends the threads; it is idempotent. A stopped server cannot be restarted. The JDK names its
 * dispatcher thread {@code HTTP-Dispatcher}; it is started as a daemon so that a forgotten server
 * does not keep the JVM alive. All methods are thread-safe.
 */
public final class HealthServer implements AutoCloseable {
  /** Path of the liveness endpoint. */
  public static final String LIVE_PATH = "/health/live";

  /** Path of the readiness endpoint. */
  public static final String READY_PATH = "/health/ready";

  /** Default host: every interface, as probes come from outside the container. */
  public static final String DEFAULT_HOST = "0.0.0.0";

  /** Default port. */
  public static final int DEFAULT_PORT = 8080;

  /** Default bound on requests served (or being read) at once. */
  public static final int DEFAULT_MAX_CONCURRENT_REQUESTS = 256;

  /** Default time a client has to send its request line and headers: 2 s. */
  public static final Duration DEFAULT_REQUEST_READ_TIMEOUT = Duration.ofSeconds(2);

  /**
   * Pending-connection queue of the listening socket (the kernel caps it at {@code somaxconn}).
   * The JDK default, 50, overflows when a few hundred slow clients reconnect at once, and a probe
   * whose SYN is dropped waits a whole second for the retransmission.
   */
  static final int ACCEPT_BACKLOG = 1024;

  private static final Logger log = LoggerFactory.getLogger(HealthServer.class);
  private static final byte[] HEALTHY =
      "{\"status\":\"healthy\"}".getBytes(StandardCharsets.UTF_8);
  private static final byte[] UNHEALTHY =
      "{\"status\":\"unhealthy\"}".getBytes(StandardCharsets.UTF_8);
  private static final byte[] NOT_FOUND =
      "{\"error\":\"not found\"}".getBytes(StandardCharsets.UTF_8);
  private static final byte[] METHOD_NOT_ALLOWED =
      "{\"error\":\"method not allowed\"}".getBytes(StandardCharsets.UTF_8);

  private final String host;
  private final int port;
  private final BooleanSupplier readinessCheck;
  private final Map<String, HttpHandler> routes;
  private final int maxConcurrentRequests;
  private final Duration requestReadTimeout;

  private final Object lock = new Object();
  private State state = State.NEW; // guarded by lock
  private HttpServer server; // guarded by lock
  private RequestExecutor executor; // guarded by lock
  private final AtomicReference<InetSocketAddress> boundAddress = new AtomicReference<>();

  private enum State {
    NEW,
    RUNNING,
    STOPPED
  }

  private HealthServer(Builder b) {
    this.host = b.host;
    this.port = b.port;
    this.readinessCheck = b.readinessCheck;
    this.routes = Map.copyOf(b.routes);
    this.maxConcurrentRequests = b.maxConcurrentRequests;
    this.requestReadTimeout = b.requestReadTimeout;
  }

  /**
   * Returns a builder with the defaults: host {@value #DEFAULT_HOST}, port {@value #DEFAULT_PORT},
   * always ready, no extra routes.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds the port and starts serving; does nothing if already running.
   *
   * @throws UncheckedIOException if the address cannot be bound (for example, port in use)
   * @throws IllegalStateException if the server was stopped (it cannot be restarted)
   */
  public void start() {
    synchronized (lock) {
      if (state == State.RUNNING) {
        return;
      }
      if (state == State.STOPPED) {
        throw new IllegalStateException(
            "HealthServer was stopped and cannot be restarted; build a new one");
      }
      HttpServer s;
      try {
        s = HttpServer.create(new InetSocketAddress(host, port), ACCEPT_BACKLOG);
      } catch (IOException e) {
        throw new UncheckedIOException(
            "Health server cannot bind "
                + host
                + ":"
                + port
                + " ("
                + e.getMessage()
                + "); choose another healthPort, or 0 for any free port",
            e);
      }
      RequestExecutor ex = new RequestExecutor(maxConcurrentRequests, requestReadTimeout);
      s.setExecutor(ex);
      s.createContext(LIVE_PATH, guarded(ex, exchange -> probe(exchange, LIVE_PATH, true)));
      s.createContext(
          READY_PATH, guarded(ex, exchange -> probe(exchange, READY_PATH, isReady())));
      if (!routes.containsKey("/")) {
        s.createContext("/", guarded(ex, HealthServer::notFound));
      }
      for (Map.Entry<String, HttpHandler> r : routes.entrySet()) {
        s.createContext(r.getKey(), guarded(ex, r.getValue()));
      }
      startAsDaemon(s);
      server = s;
      executor = ex;
      state = State.RUNNING;
      boundAddress.set(s.getAddress());
      log.info(
          "Health server listening on {} ({} and {}{}), maxConcurrentRequests={},"
              + " requestReadTimeout={}",
          s.getAddress(),
          LIVE_PATH,
          READY_PATH,
          routes.isEmpty() ? "" : ", routes " + routes.keySet(),
          maxConcurrentRequests,
          dev.tether.DurationText.of(requestReadTimeout));
    }
  }

  /**
   * Stops serving: closes every connection, frees the port and ends the server's threads.
   * Idempotent; returns within about a second. Restores the interrupt flag if interrupted.
   */
  public void stop() {
    HttpServer s;
    RequestExecutor ex;
    synchronized (lock) {
      if (state == State.STOPPED) {
        return;
      }
      boolean wasRunning = state == State.RUNNING;
      state = State.STOPPED;
      s = server;
      ex = executor;
      server = null;
      executor = null;
      boundAddress.set(null);
      if (!wasRunning) {
        return;
      }
    }
    s.stop(0);
    ex.shutdown();
    log.info("Health server stopped");
  }

  /** Same as {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }

  /**
   * Returns whether the server is serving.
   *
   * @return true between {@link #start()} and {@link #stop()}
   */
  public boolean isRunning() {
    synchronized (lock) {
      return state == State.RUNNING;
    }
  }

  /**
   * Returns the bound address, with the actual port when the configured port was 0.
   *
   * @return the local address
   * @throws IllegalStateException if the server is not running
   */
  public InetSocketAddress address() {
    InetSocketAddress a = boundAddress.get();
    if (a == null) {
      throw new IllegalStateException("HealthServer is not running; call start() first");
    }
    return a;
  }

  /**
   * Returns counters of the slow-client defences, for tests: [requests cut off by the read
   * timeout, connections refused, exchanges in progress, slow requests cut off to make room].
   */
  long[] defenceCounters() {
    synchronized (lock) {
      return executor == null
          ? new long[] {0, 0, 0, 0}
          : new long[] {
            executor.timedOutCount(),
            executor.rejectedCount(),
            executor.activeCount(),
            executor.evictedCount()
          };
    }
  }

  private boolean isReady() {
    try {
      return readinessCheck.getAsBoolean();
    } catch (RuntimeException | Error e) {
      if (e instanceof VirtualMachineError) {
        throw e;
      }
      log.error("Readiness check {} threw; reporting not ready (503)", readinessCheck, e);
      return false;
    }
  }

  private static void probe(HttpExchange exchange, String path, boolean healthy)
      throws IOException {
    if (!exchange.getRequestURI().getPath().equals(path)) {
      notFound(exchange);
      return;
    }
    String method = exchange.getRequestMethod();
    if (!method.equals("GET") && !method.equals("HEAD")) {
      exchange.getResponseHeaders().set("Allow", "GET, HEAD");
      respond(exchange, 405, METHOD_NOT_ALLOWED);
      return;
    }
    respond(exchange, healthy ? 200 : 503, healthy ? HEALTHY : UNHEALTHY);
  }

  private static void notFound(HttpExchange exchange) throws IOException {
    respond(exchange, 404, NOT_FOUND);
  }

  private static void respond(HttpExchange exchange, int status, byte[] body) throws IOException {
    try (exchange) {
      var headers = exchange.getResponseHeaders();
      headers.set("Content-Type", "application/json");
      headers.set("Cache-Control", "no-store");
      if (exchange.getRequestMethod().equals("HEAD")) {
        // The JDK wants -1 for HEAD; the length of the body a GET would get is set by hand.
        headers.set("Content-Length", Integer.toString(body.length));
        exchange.sendResponseHeaders(status, -1);
      } else {
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    }
  }

  /** Marks the end of request reading, and keeps a failing handler from killing the exchange. */
  private static HttpHandler guarded(RequestExecutor ex, HttpHandler handler) {
    return exchange -> {
      ex.enterHandler();
      try {
        handler.handle(exchange);
      } catch (IOException e) {
        log.debug("Health server: client went away during {}", exchange.getRequestURI(), e);
        exchange.close();
      } catch (RuntimeException e) {
        log.error(
            "Health server handler for {} {} failed",
            exchange.getRequestMethod(),
            exchange.getRequestURI(),
            e);
        try {
          respond(exchange, 500, "{\"error\":\"internal error\"}".getBytes(StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e2) {
          exchange.close();
        }
      }
    };
  }

  /**
   * Starts the JDK server from a daemon thread: its dispatcher thread inherits the daemon flag, so
   * a server that is never stopped does not keep the JVM alive.
   */
  private static void startAsDaemon(HttpServer s) {
    AtomicReference<RuntimeException> failure = new AtomicReference<>();
    Thread starter =
        new Thread(
            () -> {
              try {
                s.start();
              } catch (RuntimeException e) {
                failure.set(e);
              }
            },
            "tether-health-start");
    starter.setDaemon(true);
    starter.start();
    boolean interrupted = false;
    while (true) {
      try {
        starter.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (failure.get() != null) {
      s.stop(0);
      throw failure.get();
    }
  }

  @Override
  public String toString() {
    InetSocketAddress a = boundAddress.get();
    return "HealthServer[" + (a != null ? a : host + ":" + port) + ", running=" + isRunning() + "]";
  }

  /** Builds a {@link HealthServer}. Each setter validates its value at once. Not thread-safe. */
  public static final class Builder {
    private String host = DEFAULT_HOST;
    private int port = DEFAULT_PORT;
    private BooleanSupplier readinessCheck = () -> true;
    private final Map<String, HttpHandler> routes = new LinkedHashMap<>();
    private int maxConcurrentRequests = DEFAULT_MAX_CONCURRENT_REQUESTS;
    private Duration requestReadTimeout = DEFAULT_REQUEST_READ_TIMEOUT;

    private Builder() {}

    /**
     * Sets the host or IP address to bind.
     *
     * @param host for example {@code 0.0.0.0} (every interface) or {@code 127.0.0.1}
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder host(String host) {
      Objects.requireNonNull(host, "host");
      if (host.isBlank()) {
        throw new IllegalArgumentException("host must not be blank");
      }
      this.host = host;
      return this;
    }

    /**
     * Sets the port to bind.
     *
     * @param port 0 (any free port, see {@link HealthServer#address()}) to 65535
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be 0..65535, was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * Sets what {@code /health/ready} asks; it runs on a server thread for each probe and should
     * be fast and non-blocking. A check that throws counts as not ready.
     *
     * @param check the readiness check
     * @return this builder
     */
    public Builder readinessCheck(BooleanSupplier check) {
      this.readinessCheck = Objects.requireNonNull(check, "check");
      return this;
    }

    /**
     * Mounts a handler on a path (the JDK's prefix matching: {@code /metrics} also serves {@code
     * /metrics/x}); a handler on {@code /} receives every unmatched path instead of the 404.
     *
     * @param path starts with {@code /}; not one of the health paths, not already mounted
     * @param handler the handler; it must send a response and close the exchange
     * @return this builder
     * @throws IllegalArgumentException if the path is invalid, reserved or already mounted
     */
    public Builder route(String path, HttpHandler handler) {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(handler, "handler");
      if (!path.startsWith("/")) {
        throw new IllegalArgumentException("route path must start with '/', was '" + path + "'");
      }
      if (path.equals(LIVE_PATH) || path.equals(READY_PATH)) {
        throw new IllegalArgumentException(
            "route path '" + path + "' is reserved for the health endpoints");
      }
      if (routes.containsKey(path)) {
        throw new IllegalArgumentException("route path '" + path + "' is already mounted");
      }
      routes.put(path, handler);
      return this;
    }

    /**
     * Sets how many requests may be read or served at once; beyond that a new connection cuts off
     * the request that has been reading the longest, or is closed at once if every thread runs a
     * handler.
     *
     * @param max at least 2
     * @return this builder
     * @throws IllegalArgumentException if less than 2
     */
    public Builder maxConcurrentRequests(int max) {
      if (max < 2) {
        throw new IllegalArgumentException("maxConcurrentRequests must be >= 2, was " + max);
      }
      this.maxConcurrentRequests = max;
      return this;
    }

    /**
     * Sets how long a client has, from its first byte, to send the request line and headers;
     * then its connection is closed.
     *
     * @param timeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder requestReadTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("requestReadTimeout must be > 0, was " + timeout);
      }
      this.requestReadTimeout = timeout;
      return this;
    }

    /**
     * Builds the server (not started).
     *
     * @return the server
     */
    public HealthServer build() {
      return new HealthServer(this);
    }
  }
}
