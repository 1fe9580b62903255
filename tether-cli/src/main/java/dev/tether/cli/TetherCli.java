package dev.tether.cli;

import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.MaskingOutputStream;
import dev.tether.cli.internal.Stores;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code tether} command: worker node, operations CLI and live dashboard.
 *
 * <p>Exit codes: 0 ok (also a worker or server stopped cleanly by SIGTERM or SIGINT), 1
 * operational failure (a store that cannot be opened, an unknown item, a worker that failed), 2
 * usage error (unknown option, bad duration, invalid queue name, empty command), 3 a worker
 * stopped by a signal whose shutdown did not finish in time, 4 a {@code checkpoint} or {@code beat}
 * whose lease is lost or whose item was cancelled. Errors are one line on standard
 * error; {@code --verbose} adds the stack trace. docs/CLI.md lists every code of every command.
 */
@Command(
    name = "tether",
    mixinStandardHelpOptions = true,
    versionProvider = TetherCli.Version.class,
    description = "Durable, crash-safe job runner: every chunk of output is proof of work.",
    subcommands = {
      EnqueueCommand.class,
      WorkerCommand.class,
      LsCommand.class,
      InspectCommand.class,
      LogsCommand.class,
      StatsCommand.class,
      WorkersCommand.class,
      RequeueCommand.class,
      CancelCommand.class,
      CheckpointCommand.class,
      BeatCommand.class,
      SweepCommand.class,
      PurgeCommand.class,
      ServeCommand.class,
      DemoCommand.class,
      CommandLine.HelpCommand.class
    })
public final class TetherCli implements Runnable {
  /** Exit code: success. */
  public static final int EXIT_OK = 0;

  /** Exit code: operational failure. */
  public static final int EXIT_FAILURE = 1;

  /** Exit code: usage error. */
  public static final int EXIT_USAGE = 2;

  /** Exit code: a worker stopped by SIGTERM or SIGINT that did not finish its shutdown in time. */
  public static final int EXIT_STOP_TIMEOUT = 3;

  /**
   * Exit code of {@code tether checkpoint} and {@code tether beat}: the lease is lost or the item
   * was cancelled; the command should stop.
   */
  public static final int EXIT_LEASE_LOST = 4;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Creates the top command (picocli instantiates it). */
  public TetherCli() {}

  @Override
  public void run() {
    throw new CommandLine.ParameterException(
        spec.commandLine(), "missing command; try 'tether demo' or 'tether --help'");
  }

  /**
   * Runs the command line and exits the JVM with its exit code.
   *
   * @param args the arguments
   */
  public static void main(String[] args) {
    // every line on standard error (errors, log lines, stack traces) with any password masked;
    // lines go out as they end (autoflush would flush, and so cut, the line at every print)
    System.setErr(new PrintStream(new MaskingOutputStream(System.err), false, StandardCharsets.UTF_8));
    configureLogging(args);
    // The JDK's HTTP server (health, /metrics, the dashboard) writes a response's headers and body
    // in two writes; with Nagle's algorithm on, a client that delays its ACK holds every answer
    // some 40 ms. Read once, when the server class loads; a -D given on the command line wins.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    int code = execute(args, out, err);
    out.flush();
    err.flush();
    System.exit(code);
  }

  /**
   * Returns the command line with its parsing rules (no {@code @FILE} expansion, durations, one
   * version for every command), for {@link #execute} and for tests that parse arguments without
   * running them.
   *
   * @return a new command line
   */
  static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new TetherCli());
    // picocli would replace an argument "@FILE" by the words of FILE, anywhere, even after "--":
    // "tether enqueue -- curl -d @body.json URL" would enqueue the file's contents instead
    cl.setExpandAtFiles(false);
    // "tether worker --version" says the same as "tether --version"
    cl.getSubcommands().values().forEach(c -> c.getCommandSpec().versionProvider(new Version()));
    cl.registerConverter(
        Duration.class,
        text -> {
          try {
            return Durations.parse(text);
          } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
          }
        });
    // picocli's own conversion puts the JDK's exception name in its message
    cl.registerConverter(
        Path.class,
        text -> {
          try {
            return Path.of(text);
          } catch (InvalidPathException e) {
            throw new CommandLine.TypeConversionException(
                "'" + Stores.escapeLineBreaks(text) + "' is not a path this system can name");
          }
        });
    return cl;
  }

  /**
   * Runs the command line in-process (used by {@link #main} and by tests).
   *
   * @param args the arguments
   * @param out standard output
   * @param err standard error
   * @return the exit code
   */
  public static int execute(String[] args, PrintWriter out, PrintWriter err) {
    boolean verbose = Arrays.asList(args).contains("--verbose");
    CommandLine cl = commandLine();
    cl.setOut(out);
    cl.setErr(err);
    cl.setParameterExceptionHandler(
        (ex, a) -> {
          CommandLine c = ex.getCommandLine();
          String name = c.getCommandSpec().qualifiedName();
          c.getErr()
              .println(
                  name + ": " + Stores.oneLine(ex) + " (see '" + name + " --help')");
          if (verbose) {
            ex.printStackTrace(c.getErr());
          }
          c.getErr().flush();
          return EXIT_USAGE;
        });
    cl.setExecutionExceptionHandler(
        (ex, c, parsed) -> {
          String name = c.getCommandSpec().qualifiedName();
          boolean usage = ex instanceof UsageException || ex instanceof IllegalArgumentException;
          // a library's error may say more below its first line (the rules it lists, the
          // database's detail and hint): every line, the rest indented
          List<String> lines = Stores.lines(ex, 20);
          c.getErr().println(name + ": error: " + lines.get(0));
          for (String more : lines.subList(1, lines.size())) {
            c.getErr().println("  " + more);
          }
          if (verbose) {
            ex.printStackTrace(c.getErr());
          }
          c.getErr().flush();
          return usage ? EXIT_USAGE : EXIT_FAILURE;
        });
    return cl.execute(args);
  }

  /**
   * Sets slf4j-simple's levels before any logger exists: warnings only for one-shot commands,
   * info for the worker and server, errors only during the narrated demo; {@code --verbose} shows
   * info everywhere.
   */
  static void configureLogging(String[] args) {
    boolean verbose = Arrays.asList(args).contains("--verbose");
    String sub = "";
    for (String a : args) {
      if (!a.startsWith("-")) {
        sub = a;
        break;
      }
    }
    String level;
    if (verbose) {
      level = "info";
    } else if (sub.equals("worker") || sub.equals("serve")) {
      level = "info";
    } else if (sub.equals("demo")) {
      level = "error";
    } else {
      level = "warn";
    }
    setIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", level);
    setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
    setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
    setIfAbsent("org.slf4j.simpleLogger.logFile", "System.err");
    setIfAbsent("org.slf4j.simpleLogger.log.com.zaxxer.hikari", verbose ? "info" : "warn");
  }

  private static void setIfAbsent(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }

  /** A usage error found after parsing (exit code 2). */
  public static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what was wrong and what to do
     */
    public UsageException(String message) {
      super(message);
    }
  }

  /** An operational failure (exit code 1). */
  public static final class FailureException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong and what to do
     */
    public FailureException(String message) {
      super(message);
    }
  }

  /**
   * Reports the version and the git commit of the build, from {@value #VERSION_RESOURCE} (written
   * by Maven when the CLI is built): {@code tether 0.1.0 (commit ef25921)}, with {@code unknown}
   * for what the build could not tell (built outside a git checkout, or not by Maven).
   */
  static final class Version implements CommandLine.IVersionProvider {
    /** The resource with {@code version} and {@code commit}, next to this class. */
    static final String VERSION_RESOURCE = "version.properties";

    @Override
    public String[] getVersion() {
      return new String[] {line(TetherCli.class.getResourceAsStream(VERSION_RESOURCE))};
    }

    /**
     * Returns the version line for the properties in {@code in}.
     *
     * @param in the properties, or null when the resource is missing
     * @return {@code tether VERSION (commit COMMIT)}
     */
    static String line(InputStream in) {
      Properties p = new Properties();
      if (in != null) {
        try (in) {
          p.load(new InputStreamReader(in, StandardCharsets.UTF_8));
        } catch (IOException e) {
          p.clear(); // unreadable: say unknown rather than fail the command
        }
      }
      return "tether " + value(p, "version") + " (commit " + value(p, "commit") + ")";
    }

    /** A filtered value, or "unknown" when it is missing or was left unfiltered ("${...}"). */
    private static String value(Properties p, String key) {
      String v = p.getProperty(key, "").strip();
      return v.isEmpty() || v.contains("${") ? "unknown" : v;
    }
  }
}
