# jdr-rules-api: `docker build -t jdr-rules-api . && docker run -p 8000:8000 jdr-rules-api`
# (SQLite in /data by default; set DATABASE_URL=postgresql://user@host:5432/db for PostgreSQL.)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DATABASE_URL=sqlite:////data/jdr.db
WORKDIR /srv

COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-cache-dir .
COPY alembic.ini ./
COPY alembic ./alembic

RUN useradd --system --uid 10001 jdr && mkdir -p /data && chown jdr /data
USER jdr
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz').status == 200 else 1)"
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]
