package dev.tether.langchain4j;

import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.test.SettableClock;
import dev.tether.test.SettableTicker;
import dev.tether.loop.Handler;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A queue of agent tasks on settable time (in memory, SQLite or PostgreSQL): mailboxes, loops,
 * tools, and what happened.
 */
final class Harness implements AutoCloseable {
  /** The AI service of the tests. */
  interface Worker {
    String work(String task);
  }

  final SettableClock clock = new SettableClock();
  final SettableTicker ticker = new SettableTicker();
  final Queues queues;
  final Mailbox<String, String> requests;
  final Mailbox<String, String> replies;

  /** Visibility 10 s; a beat extends by 10 s at most once a second; no long poll. */
  MainLoopConfig config =
      MainLoopConfig.builder()
          .visibilityTimeout(Duration.ofSeconds(10))
          .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
          .waitTime(Duration.ZERO)
          .build();

  final Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
  final List<String> toolsRun = new CopyOnWriteArrayList<>();
  final List<String> events = new CopyOnWriteArrayList<>();

  /** Queues in memory. */
  Harness() {
    this(Queues.Kind.IN_MEMORY);
  }

  /** Queues on {@code kind}, on this harness's clock. */
  Harness(Queues.Kind kind) {
    queues = Queues.open(kind, clock);
    requests = queues.requests();
    replies = queues.replies();
  }

  void advance(Duration d) {
    clock.advance(d);
    ticker.advance(d);
  }

  /** Adds a tool that records its name and then runs {@code body}. */
  Harness tool(String name, ToolExecutor body) {
    tools.put(ToolSpecification.builder().name(name).description("test tool " + name).build(),
        (request, memoryId) -> {
          toolsRun.add(name);
          return body.execute(request, memoryId);
        });
    return this;
  }

  /** An AI service on {@code model} with these tools and the item's checkpoint as memory. */
  Worker worker(TetherAgents agents, ChatModel model) {
    return worker(agents, model, tools);
  }

  /** An AI service on {@code model} with {@code tools} and the item's checkpoint as memory. */
  static Worker worker(TetherAgents agents, ChatModel model, Map<ToolSpecification, ToolExecutor> tools) {
    return agents.attach(AiServices.builder(Worker.class), model)
        .tools(tools)
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(1000)
            .chatMemoryStore(agents.memoryStore())
            .build())
        .build();
  }

  /** The usual handler: bind the context around the AI-service call. */
  static Handler<String, String> handler(TetherAgents agents, Worker worker, List<AgentRun> runs) {
    return (task, ctx) -> {
      try (AgentRun run = agents.bind(ctx)) {
        runs.add(run);
        return worker.work(task);
      }
    };
  }

  MainLoop<String, String> loop(String name, Handler<String, String> handler) {
    return loop(name, handler, LeaseExtender.Listener.NONE);
  }

  MainLoop<String, String> loop(
      String name, Handler<String, String> handler, LeaseExtender.Listener extenderListener) {
    return MainLoop.builder(name, requests, handler)
        .config(config)
        .ticker(ticker)
        .extenderListener(extenderListener)
        .listener(new MainLoop.Listener() {
          @Override
          public void completed(Message<?, ?> message, Duration took) {
            events.add(name + ": completed " + message.id());
          }

          @Override
          public void failed(Message<?, ?> message, Exception error,
              DeadLetterPolicy.Decision decision, Duration took) {
            events.add(name + ": failed " + message.id() + " " + error);
          }

          @Override
          public void leaseLost(Message<?, ?> message) {
            events.add(name + ": leaseLost " + message.id());
          }

          @Override
          public void cancelled(Message<?, ?> message) {
            events.add(name + ": cancelled " + message.id());
          }

          @Override
          public void handedBack(Message<?, ?> message) {
            events.add(name + ": handedBack " + message.id());
          }
        })
        .build();
  }

  List<String> replyBodies() {
    return replies.receive(10, Duration.ofSeconds(30), Duration.ZERO).stream()
        .map(Message::body)
        .toList();
  }

  @Override
  public void close() {
    queues.close();
  }
}
