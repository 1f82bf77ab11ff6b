# jdr-rules-api: `docker build -t jdr-rules-api . && docker run -p 8000:8000 -v jdr-data:/data jdr-rules-api`
# (SQLite in the named volume mounted at /data; set DATABASE_URL=postgresql://user:pw@host:5432/db for PostgreSQL.)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DATABASE_URL=sqlite:////data/jdr.db
WORKDIR /srv

# The dependencies in a layer of their own: rebuilt only when pyproject.toml changes.
# (setuptools reads the metadata without the code: an empty package stands in for it.)
COPY pyproject.toml ./
RUN mkdir app && touch app/__init__.py \
    && pip install --no-cache-dir . \
    && pip uninstall -y jdr-rules-api \
    && rm -rf app build *.egg-info

# Then the application itself (the code changes often, the dependencies seldom).
COPY README.md alembic.ini ./
COPY alembic ./alembic
COPY app ./app
RUN pip install --no-cache-dir --no-deps .

RUN useradd --system --uid 10001 jdr && mkdir -p /data && chown jdr /data
USER jdr
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2).status == 200 else 1)"
# applies the migrations, then serves (logs carry each request's X-Request-Id)
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]
