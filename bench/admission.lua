-- wrk script for the webhook benchmark: POSTs the AdmissionReview in the
-- file named by the environment variable PK_REVIEW to the path in PK_PATH.
local f = assert(io.open(os.getenv("PK_REVIEW"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.path = os.getenv("PK_PATH") or "/validate"
wrk.headers["Content-Type"] = "application/json"
