# ---- main -----------------------------------------------------------------

def main():
    path = os.environ.get("GATEPIPE_EXPERIMENT")
    if not path:
        raise SystemExit("GATEPIPE_EXPERIMENT is not set: gatepipe starts this worker")
    run = Run(path)
    job = JOBS.get(run.cfg.get("job"))
    if job is None:
        raise SystemExit("job %r is not one of %s" % (run.cfg.get("job"), ", ".join(sorted(JOBS))))
    try:
        job(run)
    except RuntimeError as e:
        if "out of memory" in str(e):
            raise SystemExit("%s out of memory in job %s (%s): lower batch_size"
                             % ("CUDA" if run.cuda else "CPU", run.cfg.get("job"), str(e).split("\n")[0][:200]))
        raise


if __name__ == "__main__":
    main()
