/**
 * Names the step a test system's start-up is at and prints it if the start-up still runs after
 * `afterMs`: a hook that then times out says only that it took too long, this says where it stood.
 */
export function watchStartup(label: string, afterMs = 60_000) {
  let step = 'starting';
  const timer = setTimeout(
    () => console.error(`${label}: still at "${step}" after ${afterMs / 1000} s`),
    afterMs,
  );
  timer.unref();
  return {
    at(next: string) {
      step = next;
    },
    done() {
      clearTimeout(timer);
    },
  };
}
