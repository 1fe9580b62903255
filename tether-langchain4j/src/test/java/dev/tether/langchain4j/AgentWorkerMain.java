package dev.tether.langchain4j;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import java.nio.file.Path;
import java.util.ArrayList;

/**
 * The child process of the kill -9 tests: runs {@link RecordedAgent} on the durable queue at
 * {@code args[0]}, recording to {@code args[1]}, with the model call of step {@code args[2]} never
 * returning, until it is killed.
 */
public final class AgentWorkerMain {
  private AgentWorkerMain() {}

  /**
   * Runs the worker.
   *
   * @param args the store's URL or path, the record file, the step at which the model hangs
   */
  public static void main(String[] args) {
    // never outlive the test: a child whose parent is gone stops at once
    ProcessHandle.current().parent().ifPresent(p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(3)));
    TetherStore store = TetherStore.open(args[0]);
    JdbcMailbox<String, String> tasks = JdbcMailbox.ofStrings(store, "agent-tasks");
    RecordedAgent agent = new RecordedAgent(Path.of(args[1]), Integer.parseInt(args[2]));
    MainLoop.builder("child", tasks, agent.handler(new ArrayList<>()))
        .config(KillNineCompatibilityTest.CONFIG)
        .build()
        .run();
  }
}
