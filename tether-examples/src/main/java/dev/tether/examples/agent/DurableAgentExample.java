package dev.tether.examples.agent;

import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.SystemMessage;
import dev.langchain4j.service.tool.ToolExecution;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TetherStore;
import dev.tether.langchain4j.AgentListener;
import dev.tether.langchain4j.AgentRun;
import dev.tether.langchain4j.ScriptedChatModel;
import dev.tether.langchain4j.TetherAgents;
import dev.tether.loop.Handler;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.Message;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A durable agent run, narrated, with no network and no key: a LangChain4j agent works through a
 * task with four tool calls on a queue in a SQLite file. Its worker is a separate JVM, killed with
 * {@code kill -9} while its third model call is in flight (after the second tool call). Once the
 * dead worker's lease runs out, the next delivery resumes from the checkpointed conversation: it
 * asks the model only the steps it had not answered, runs only the tools not yet run, and the
 * answer is acknowledged once.
 *
 * <p>The model is {@link ScriptedChatModel}: it asks for the tools in the order written below and
 * reads from each request how far the conversation is, as a real model reads the history. It is
 * the test double of tether-langchain4j's own tests, published in that module's test jar
 * ({@code tether-langchain4j/src/test/java/dev/tether/langchain4j/ScriptedChatModel.java}).
 *
 * <p>Run (about ten seconds): {@code mvn -q -pl tether-examples -am test-compile exec:java@agent}
 */
public final class DurableAgentExample {
  /** The task the agent works on. */
  static final String TASK = "fix issue #21";

  /** The tools the script asks for, in order. */
  static final List<String> TOOLS = List.of("searchIssues", "readFile", "editFile", "runTests");

  /** The model step (0-based) whose call stalls in the first worker, which is killed there. */
  static final int STALLED_STEP = 2;

  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.S");
  private static final Pattern ANSWERED = Pattern.compile("model answered step (\\d+)");
  private static final Pattern TOOL_DONE = Pattern.compile("tool (\\w+) -> ");
  private static final String STALLING = "the model is slow to answer step";

  /** Visibility 3 s; a beat extends the lease to 2 s from now, at most every 0.3 s. */
  static final MainLoopConfig CONFIG = MainLoopConfig.builder()
      .visibilityTimeout(Duration.ofSeconds(3))
      .leaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(300), Duration.ofSeconds(2)))
      .waitTime(Duration.ofMillis(500))
      .longestSilentCall(Duration.ofSeconds(1)) // a model call gives no beat: at most 1 s here
      .build();

  /** The agent, as a LangChain4j AI service. */
  interface Engineer {
    @SystemMessage("You are a careful engineer. Use the tools, then report what you did.")
    String work(String task);
  }

  /** The agent's tools: each takes a moment, as real tools do. */
  static final class RepoTools {
    @Tool("Searches the issue tracker")
    String searchIssues(String query) {
      return pause(400, "2 issues match '" + query + "': #18 durable agent runs, #21 lease lost mid-run");
    }

    @Tool("Reads a file of the repository")
    String readFile(String path) {
      return pause(400, path + ": 240 lines; the lost lease is logged on every beat");
    }

    @Tool("Changes a file of the repository")
    String editFile(String path, String change) {
      return pause(400, path + ": applied '" + change + "'");
    }

    @Tool("Runs the tests of a module")
    String runTests(String module) {
      return pause(400, module + ": 212 tests, 0 failures");
    }
  }

  /**
   * What happened, as the narration tells it.
   *
   * @param answeredByFirst model steps (1-based) answered by the killed worker, in order
   * @param toolsByFirst tools the killed worker ran, in order
   * @param answeredBySecond model steps (1-based) answered by the worker that resumed, in order
   * @param toolsBySecond tools the worker that resumed ran, in order
   * @param resumed whether the second delivery started from the checkpointed conversation
   * @param delivery the delivery count of the run that resumed
   * @param answers the results received (and acknowledged)
   * @param tasksLeft tasks still in the queue at the end
   */
  public record Outcome(
      List<Integer> answeredByFirst,
      List<String> toolsByFirst,
      List<Integer> answeredBySecond,
      List<String> toolsBySecond,
      boolean resumed,
      int delivery,
      List<String> answers,
      long tasksLeft) {
    /**
     * Returns whether the run went as the narration says: every model step and every tool once,
     * the second worker continuing exactly where the first stopped, one answer.
     *
     * @return true if so
     */
    public boolean asNarrated() {
      List<Integer> steps = new ArrayList<>(answeredByFirst);
      steps.addAll(answeredBySecond);
      List<String> tools = new ArrayList<>(toolsByFirst);
      tools.addAll(toolsBySecond);
      return answeredByFirst.equals(List.of(1, 2))
          && steps.equals(List.of(1, 2, 3, 4, 5))
          && toolsByFirst.equals(TOOLS.subList(0, STALLED_STEP))
          && tools.equals(TOOLS)
          && resumed && delivery == 2 && answers.size() == 1 && tasksLeft == 0;
    }
  }

  private DurableAgentExample() {}

  /**
   * Runs the example; with the arguments {@code worker <sqlite-file>}, runs the worker process it
   * starts (until killed).
   *
   * @param args none, or {@code worker} and the SQLite file
   * @throws Exception if the run did not go as narrated, or was interrupted
   */
  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("worker")) {
      worker(args[1]);
      return;
    }
    Thread.currentThread().setName("example");
    Outcome outcome = run(System.out);
    if (!outcome.asNarrated()) {
      throw new IllegalStateException("the run did not go as narrated: " + outcome);
    }
  }

  /**
   * Runs the example, narrating to {@code out}.
   *
   * @param out where the narration goes
   * @return what happened
   * @throws Exception if interrupted, or the worker process could not be started
   */
  public static Outcome run(PrintStream out) throws Exception {
    Path dir = Files.createTempDirectory("tether-agent-example");
    Path db = dir.resolve("agents.db");
    try (TetherStore store = TetherStore.open(db.toString())) {
      JdbcMailbox<String, String> tasks = JdbcMailbox.ofStrings(store, "agent-tasks");
      JdbcMailbox<String, String> results = JdbcMailbox.ofStrings(store, "agent-results");
      say(out, "Durable agent run on " + db.getFileName() + ": visibility 3 s, a beat extends the"
          + " lease to 2 s from now at most every 0.3 s; tools take 0.4 s, model calls 0.2 s");
      tasks.send(TASK, results);

      // ---- worker-1: a separate JVM, killed with kill -9 in the middle of the run ----------
      say(out, ">>> worker-1 starts (a separate JVM)");
      Process child = startWorker(db);
      List<Integer> answeredByFirst = new ArrayList<>();
      List<String> toolsByFirst = new ArrayList<>();
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = lines.readLine()) != null) {
          out.println(line);
          Matcher answered = ANSWERED.matcher(line);
          if (answered.find()) {
            answeredByFirst.add(Integer.parseInt(answered.group(1)));
          }
          Matcher tool = TOOL_DONE.matcher(line);
          if (tool.find()) {
            toolsByFirst.add(tool.group(1));
          }
          if (line.contains(STALLING)) {
            break;
          }
        }
        if (line == null) {
          throw new IllegalStateException("worker-1 exited (" + child.waitFor() + ") before its"
              + " model call of step " + (STALLED_STEP + 1));
        }
        say(out, ">>> kill -9 worker-1 (pid " + child.pid() + ") while its model call of step "
            + (STALLED_STEP + 1) + " is in flight");
      } finally {
        child.destroyForcibly(); // SIGKILL: no shutdown hook, no hand-back, no release
        child.waitFor(10, TimeUnit.SECONDS);
      }
      say(out, "its lease is not extended any more; the task is redelivered once it runs out"
          + " (at most 2 s after the last extension)");

      // ---- worker-2: this process, resuming from the checkpoint ------------------------------
      say(out, ">>> worker-2 starts");
      Narrator narrator = new Narrator(out);
      List<AgentRun> runs = new CopyOnWriteArrayList<>();
      MainLoop<String, String> second = MainLoop.builder("worker-2", tasks, handler(narrator, runs, out))
          .config(CONFIG)
          .listener(new MainLoop.Listener() {
            @Override
            public void completed(Message<?, ?> message, Duration took) {
              say(out, "the answer is sent and the task acknowledged, as one step");
            }
          })
          .build();
      // the normal setup path checks the timeouts, including the longest silent call
      LoopGroup group = LoopGroup.builder().loop(second).noWatchdog().noHealthServer().handleSignals(false)
          .build();
      Thread thread = new Thread(group::run, "worker-2-group");
      thread.start();
      List<Message<String, String>> answers = new ArrayList<>();
      try {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (answers.isEmpty() && System.nanoTime() < until) {
          answers.addAll(results.receive(10, Duration.ofSeconds(30), Duration.ofSeconds(5)));
        }
      } finally {
        group.shutdown();
        thread.join(10_000);
      }

      say(out, "");
      for (Message<String, String> answer : answers) {
        say(out, "result: " + answer.body());
        answer.acknowledge();
      }
      AgentRun resumedRun = runs.isEmpty() ? null : runs.get(0);
      Outcome outcome = new Outcome(
          List.copyOf(answeredByFirst), List.copyOf(toolsByFirst),
          narrator.answered(), narrator.tools(),
          resumedRun != null && resumedRun.resumed(),
          resumedRun == null ? 0 : resumedRun.context().deliveryCount(),
          answers.stream().map(Message::body).toList(),
          tasks.approximateCount());
      say(out, "model steps answered: by worker-1 " + outcome.answeredByFirst() + ", by worker-2 "
          + outcome.answeredBySecond() + " (none twice; step " + (STALLED_STEP + 1)
          + " was in flight when worker-1 died)");
      say(out, "tools run: by worker-1 " + outcome.toolsByFirst() + ", by worker-2 "
          + outcome.toolsBySecond() + " (each once)");
      say(out, "tasks left: " + outcome.tasksLeft() + ", results: " + answers.size()
          + " (acknowledged once)");
      tasks.close();
      results.close();
      return outcome;
    } finally {
      delete(dir);
    }
  }

  /** The handler: bind the item's context around the AI-service call. */
  private static Handler<String, String> handler(Narrator narrator, List<AgentRun> runs, PrintStream out) {
    TetherAgents agents = TetherAgents.builder().listener(narrator).build();
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("searchIssues", "{\"query\": \"lease lost\"}")
        .callTool("readFile", "{\"path\": \"tether-core/src/main/java/dev/tether/LeaseExtender.java\"}")
        .callTool("editFile", "{\"path\": \"LeaseExtender.java\", \"change\": \"log the lost lease once\"}")
        .callTool("runTests", "{\"module\": \"tether-core\"}")
        .answer(r -> "Done with '" + ScriptedChatModel.task(r) + "': found #21, changed"
            + " LeaseExtender.java, tether-core's tests pass.")
        .build();
    Engineer engineer = agents.attach(AiServices.builder(Engineer.class), model)
        .tools(new RepoTools())
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(200)
            .chatMemoryStore(agents.memoryStore()) // the item's checkpoint
            .build())
        .build();
    model.whenCalled(step -> {
      if (step == STALLED_STEP && narrator.stallAtStep) {
        say(out, "  " + STALLING + " " + (step + 1) + " (no beat while it thinks)");
        pause(60_000, null);
      } else {
        pause(200, null);
      }
    });
    return (task, ctx) -> {
      try (AgentRun run = agents.bind(ctx)) {
        runs.add(run);
        say(out, "delivery " + ctx.deliveryCount() + " (attempt " + ctx.attempt() + " of "
            + ctx.maxAttempts() + ")" + (run.resumed()
                ? ": resuming the checkpointed conversation"
                : ": a fresh start"));
        return engineer.work(task);
      }
    };
  }

  /** worker-1: runs the agent on the queue until it is killed. */
  private static void worker(String db) {
    Thread.currentThread().setName("worker-1");
    // never outlive the example: a worker whose parent is gone stops at once
    ProcessHandle.current().parent().ifPresent(p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(3)));
    Narrator narrator = new Narrator(System.out);
    narrator.stallAtStep = true;
    TetherStore store = TetherStore.open(db);
    JdbcMailbox<String, String> tasks = JdbcMailbox.ofStrings(store, "agent-tasks");
    MainLoop.builder("worker-1", tasks, handler(narrator, new ArrayList<>(), System.out))
        .config(CONFIG)
        .build()
        .run();
  }

  private static Process startWorker(Path db) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    return new ProcessBuilder(java.toString(), "-XX:TieredStopAtLevel=1", "-cp", classPath(),
        DurableAgentExample.class.getName(), "worker", db.toString())
        .redirectErrorStream(true)
        .start();
  }

  /** This program's class path: the class loader's (as under exec:java), else the JVM's. */
  private static String classPath() {
    if (DurableAgentExample.class.getClassLoader() instanceof URLClassLoader loader
        && loader.getURLs().length > 0) {
      List<String> entries = new ArrayList<>();
      for (URL url : loader.getURLs()) {
        try {
          entries.add(Paths.get(url.toURI()).toString());
        } catch (URISyntaxException | IllegalArgumentException e) {
          throw new IllegalStateException("cannot put " + url + " on the worker's class path", e);
        }
      }
      return String.join(File.pathSeparator, entries);
    }
    return System.getProperty("java.class.path");
  }

  /** Tells what the agent does and what each step does to the lease. */
  private static final class Narrator implements AgentListener {
    private final PrintStream out;
    private final List<Integer> answered = new CopyOnWriteArrayList<>();
    private final List<String> tools = new CopyOnWriteArrayList<>();
    private volatile int asking;
    private volatile boolean stallAtStep;

    Narrator(PrintStream out) {
      this.out = out;
    }

    List<Integer> answered() {
      return List.copyOf(answered);
    }

    List<String> tools() {
      return List.copyOf(tools);
    }

    @Override
    public void modelRequest(AgentRun run, ChatRequest request) {
      asking = ScriptedChatModel.stepOf(request) + 1;
      say(out, "model call, step " + asking + " (beat; lease checked with the store)");
    }

    @Override
    public void modelResponse(AgentRun run, ChatResponse response) {
      answered.add(asking);
      say(out, "model answered step " + asking + ": " + (response.aiMessage().hasToolExecutionRequests()
          ? "call " + response.aiMessage().toolExecutionRequests().get(0).name()
          : "the final answer") + " (beat)");
    }

    @Override
    public void toolStarting(AgentRun run, ToolExecutionRequest request) {
      say(out, "  tool " + request.name() + request.arguments() + " (beat before)");
    }

    @Override
    public void toolFinished(AgentRun run, ToolExecution execution) {
      tools.add(execution.request().name());
      say(out, "  tool " + execution.request().name() + " -> " + execution.result() + " (beat after)");
    }

    @Override
    public void checkpointed(AgentRun run, int messages, int bytes) {
      say(out, "    checkpoint: " + messages + " messages, " + bytes + " bytes, fenced by the lease"
          + " of delivery " + run.context().deliveryCount());
    }

    @Override
    public void stopped(AgentRun run, WorkStoppedException reason) {
      say(out, "  stopped (" + reason.reason() + "): " + reason.getMessage());
    }
  }

  private static String pause(long millis, String result) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return result;
  }

  private static void say(PrintStream out, String line) {
    out.println(LocalTime.now().format(TIME) + " [" + Thread.currentThread().getName() + "] " + line);
    out.flush();
  }

  private static void delete(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
        Files.deleteIfExists(p);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
