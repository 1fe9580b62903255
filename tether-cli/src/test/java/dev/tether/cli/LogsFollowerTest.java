package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code logs --follow} prints what is new between two windows of one stream. */
class LogsFollowerTest {
  @Test
  void theNewPartIsWhatFollowsTheOverlap() {
    assertThat(LogsCommand.Follower.newPart("", "a\nb\n")).isEqualTo("a\nb\n");
    assertThat(LogsCommand.Follower.newPart("a\nb\n", "a\nb\n")).isEmpty();
    assertThat(LogsCommand.Follower.newPart("a\nb\n", "a\nb\nc\n")).isEqualTo("c\n");
    // the window slid: its start was dropped, the overlap is the old end
    assertThat(LogsCommand.Follower.newPart("a\nb\nc\n", "b\nc\nd\n")).isEqualTo("d\n");
    // nothing in common: more than a window was written between two reads
    assertThat(LogsCommand.Follower.newPart("a\n", "x\ny\n")).isEqualTo("[... output skipped ...]\nx\ny\n");
  }
}
