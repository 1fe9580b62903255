package dev.tether.cli.internal;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * What a work item runs: the payload stored as the item's input, as JSON ({@code
 * {"argv":[...],"shell":false,"liveness":"output","env":{}}}). Immutable; validated on
 * construction.
 *
 * @param argv the program and its arguments; with {@code shell}, exactly one element: the script
 *     given to {@code /bin/sh -c}
 * @param shell whether to run {@code argv[0]} through {@code /bin/sh -c}
 * @param liveness {@code output} (only output proves work) or {@code process} (the lease is renewed
 *     at a fixed interval while the child process is alive)
 * @param env environment additions (names {@code [A-Za-z_][A-Za-z0-9_]*})
 */
public record CommandSpec(
    @JsonProperty("argv") List<String> argv,
    @JsonProperty("shell") boolean shell,
    @JsonProperty("liveness") String liveness,
    @JsonProperty("env") Map<String, String> env) {

  /** Liveness mode: only output chunks prove work (the default). */
  public static final String LIVENESS_OUTPUT = "output";

  /** Liveness mode: the lease is renewed while the process is alive. */
  public static final String LIVENESS_PROCESS = "process";

  /** Largest payload accepted, in bytes of JSON. */
  public static final int MAX_PAYLOAD_BYTES = 64 * 1024;

  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /**
   * Validates and normalizes the spec.
   *
   * @param argv the program and its arguments (one script with {@code shell})
   * @param shell whether to run through {@code /bin/sh -c}
   * @param liveness {@code output} or {@code process}; null means {@code output}
   * @param env environment additions, or null
   * @throws IllegalArgumentException if argv is empty, its program is blank, a shell spec has more
   *     than one element, the liveness mode is unknown, an environment name is invalid or a
   *     value holds a NUL character
   */
  public CommandSpec {
    if (argv == null || argv.isEmpty()) {
      throw new IllegalArgumentException("empty command: give a program to run, e.g. -- echo hi");
    }
    for (String a : argv) {
      if (a == null) {
        throw new IllegalArgumentException("command has a null argument: " + argv);
      }
      if (a.indexOf('\0') >= 0) {
        throw new IllegalArgumentException("command argument contains a NUL character: " + argv);
      }
    }
    if (argv.get(0).isBlank()) {
      throw new IllegalArgumentException("empty command: the program name is blank");
    }
    if (shell && argv.size() != 1) {
      throw new IllegalArgumentException(
          "a shell command has exactly one element (the script), had " + argv.size());
    }
    argv = List.copyOf(argv);
    liveness = liveness == null ? LIVENESS_OUTPUT : liveness;
    if (!LIVENESS_OUTPUT.equals(liveness) && !LIVENESS_PROCESS.equals(liveness)) {
      throw new IllegalArgumentException(
          "unknown liveness '" + liveness + "'; use 'output' or 'process'");
    }
    Map<String, String> e = new TreeMap<>();
    if (env != null) {
      for (Map.Entry<String, String> en : env.entrySet()) {
        if (en.getKey() == null || !ENV_NAME.matcher(en.getKey()).matches()) {
          throw new IllegalArgumentException(
              "invalid environment variable name '" + en.getKey() + "'; use [A-Za-z_][A-Za-z0-9_]*");
        }
        String value = Objects.requireNonNullElse(en.getValue(), "");
        if (value.indexOf('\0') >= 0) {
          throw new IllegalArgumentException(
              "environment variable " + en.getKey() + " has a NUL character in its value");
        }
        e.put(en.getKey(), value);
      }
    }
    env = java.util.Collections.unmodifiableMap(e);
  }

  /**
   * Returns a plain (no shell, output liveness, no env) spec.
   *
   * @param argv the program and arguments
   * @return the spec
   */
  public static CommandSpec of(List<String> argv) {
    return new CommandSpec(argv, false, LIVENESS_OUTPUT, Map.of());
  }

  /**
   * Returns the argv to start: {@code argv}, or {@code /bin/sh -c script} for a shell spec.
   *
   * @return the process argv
   */
  public List<String> processArgv() {
    return shell ? List.of("/bin/sh", "-c", argv.get(0)) : argv;
  }

  /**
   * Returns the command as one line for people (shell-quoted where needed).
   *
   * @return the display text
   */
  public String display() {
    if (shell) {
      return "sh -c " + quote(argv.get(0));
    }
    StringBuilder b = new StringBuilder();
    for (String a : argv) {
      if (b.length() > 0) {
        b.append(' ');
      }
      b.append(quote(a));
    }
    return b.toString();
  }

  private static String quote(String a) {
    if (!a.isEmpty() && a.matches("[A-Za-z0-9_./:=@%+,-]+")) {
      return a;
    }
    return "'" + a.replace("'", "'\\''") + "'";
  }

  /**
   * Serializes the spec as its stored JSON.
   *
   * @return the JSON text
   */
  public String toJson() {
    try {
      return Json.MAPPER.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize " + this + "; indicates a bug", e);
    }
  }

  /**
   * Parses a stored payload.
   *
   * @param json the item's input
   * @return the spec
   * @throws IllegalArgumentException if the payload is missing, too large, not JSON or invalid
   */
  public static CommandSpec fromJson(String json) {
    if (json == null || json.isBlank()) {
      throw new IllegalArgumentException("the item has no command payload");
    }
    int size = json.getBytes(StandardCharsets.UTF_8).length;
    if (size > MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException("the command is " + size + " bytes as stored, over the"
          + " limit of " + MAX_PAYLOAD_BYTES + " bytes; pass long input in a file the command reads");
    }
    try {
      CommandSpec s = Json.MAPPER.readValue(json, CommandSpec.class);
      if (s == null) {
        throw new IllegalArgumentException("the command payload is JSON null");
      }
      return s;
    } catch (JsonProcessingException e) {
      Throwable c = e.getCause();
      if (c instanceof IllegalArgumentException) {
        throw (IllegalArgumentException) c;
      }
      throw new IllegalArgumentException(
          "the item's input is not a Tether command payload: " + e.getOriginalMessage());
    }
  }
}
